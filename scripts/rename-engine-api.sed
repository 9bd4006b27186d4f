# rename-engine-api.sed - the engine's public names under one prefix (engine_),
# as storage/engine/README.md "Names" describes. For the lead, after all
# branches are merged, on the whole tree:
#   git ls-files -z '*.c' '*.h' '*.md' | xargs -0 sed -i -f scripts/rename-engine-api.sed
# Word boundaries only: every old name below occurs only as the engine's own
# symbol (checked with git grep -w), and no new name existed before.
# Then delete this file.
s/\btable_ref\b/engine_table_ref/g
s/\btable_unref\b/engine_table_unref/g
s/\btable_column\b/engine_table_column/g
s/\bscan_next\b/engine_scan_next/g
s/\bscan_close\b/engine_scan_close/g
s/\bscan_snapshot\b/engine_scan_snapshot/g
s/\bscan_columns\b/engine_scan_columns/g
s/\bplan_free\b/engine_plan_free/g
s/\bsnapshots_free\b/engine_snapshots_free/g
s/\bdv_bytes_unref\b/engine_dv_bytes_unref/g
s/\bst_idem_key_valid\b/engine_idem_key_valid/g
s/\bst_idem\b/engine_idem/g
s/\bST_IDEM_KEY_MAX\b/ENGINE_IDEM_KEY_MAX/g
