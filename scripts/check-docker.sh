#!/usr/bin/env bash
# check-docker.sh - can docker/Dockerfile build and run strike? Checked without
# a Docker engine, from this machine's apt lists and dpkg database.
#
#   scripts/check-docker.sh [--dockerfile FILE] [--bin-dir DIR] [-o APT_OPTION]... [-v]
#
# (a) build stage: every pkg_check_modules module (and, recursively, the
#     modules its .pc file requires), find_package, find_library, find_path and
#     find_program of the CMake files the stage copies (CMakeLists.txt and
#     *.cmake under its COPY sources; blocks behind an if() on an option the
#     stage's cmake -D turns off, or that is off by default, are skipped) is
#     resolved to the file that satisfies it here (pkg-config --path, the C
#     compiler's search, command -v) and that file to its package (dpkg -S);
#     the package must be in the dependency closure of the stage's apt-get
#     install packages (apt-cache depends --recurse, no recommends or suggests).
# (b) runtime stage (the last one): every shared library `ldd` resolves for
#     DIR/striked and DIR/strike (default build/bin) belongs to a package in the
#     closure of that stage's packages.
# A gap fails with the stage, the requirement, the package that provides it
# and the file: "build stage: pkg-config module libcurl ... needs package
# libcurl4-openssl-dev". Empty apt lists (apt-get update never ran) fail too:
# the closure cannot be computed, so nothing can be said to be in it.
# -o passes an option to apt-cache and apt-get (the self-test points
# Dir::State::Lists at an empty directory); -v prints each requirement with its
# package. No network; a few seconds.
# Exit 0: every requirement is met; 1: a gap or an unusable machine; 2: usage.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)

dockerfile=$root/docker/Dockerfile
bindir=$root/build/bin
apt_opts=()
verbose=0
while [ $# -gt 0 ]; do
  case "$1" in
    --dockerfile) dockerfile=${2:?--dockerfile FILE}; shift 2 ;;
    --bin-dir) bindir=${2:?--bin-dir DIR}; shift 2 ;;
    -o) apt_opts+=(-o "${2:?-o APT_OPTION}"); shift 2 ;;
    -v) verbose=1; shift ;;
    -h|--help) sed -n '2,28p' "$0"; exit 0 ;;
    *) echo "usage: scripts/check-docker.sh [--dockerfile FILE] [--bin-dir DIR] [-o APT_OPTION]... [-v]" >&2
       exit 2 ;;
  esac
done
# paths as given, from where the script was started; then everything from the root
dockerfile=$(realpath -m "$dockerfile")
bindir=$(realpath -m "$bindir")
cd "$root"

fails=0
fail() {
  echo "check-docker: $*" >&2
  fails=$((fails + 1))
}
die() {
  echo "check-docker: $*" >&2
  exit 1
}

[ -f "$dockerfile" ] || die "no Dockerfile at $dockerfile"
for b in striked strike; do
  [ -x "$bindir/$b" ] || die "no $bindir/$b: build first (the runtime check reads its libraries)"
done
for t in apt-cache apt-get dpkg pkg-config ldd cc; do
  command -v "$t" >/dev/null || die "$t not found (scripts/deps.sh installs the build tools)"
done

# --- the apt lists: without them apt-cache knows only what is installed ---------
lists=$(apt-get "${apt_opts[@]}" indextargets --format '$(FILENAME)' 'Created-By: Packages' 2>/dev/null || true)
have_list=0
for f in $lists; do
  [ -s "$f" ] && have_list=1
done
[ "$have_list" = 1 ] || die "the apt package lists are empty (apt-get update has never run here):" \
  "the packages an image installs cannot be resolved; run apt-get update, then this check again"

# --- the Dockerfile: stages, their apt-get install packages, the build's sources -
# One instruction per line (continuations joined), then per stage:
#   S <index> <name>           a FROM
#   P <index> <package>        an apt-get install argument
#   C <index> <path>           a COPY source (not --from)
#   D <index> <VAR> <ON|OFF>   a cmake -DVAR=value of a RUN
#   M <index>                  the stage runs cmake (the build stage)
parsed=$(awk '
  { sub(/\r$/, "") }
  /^[[:space:]]*#/ && cont == "" { next }
  {
    line = cont $0
    if (line ~ /\\[[:space:]]*$/) { sub(/\\[[:space:]]*$/, " ", line); cont = line; next }
    cont = ""
    n = split(line, w, /[[:space:]]+/)
    i = 1; while (i <= n && w[i] == "") i++
    op = toupper(w[i])
    if (op == "FROM") {
      st++; name = ""
      for (j = i + 1; j <= n; j++) if (toupper(w[j]) == "AS" && j < n) name = w[j + 1]
      print "S", st, (name == "" ? "stage" st : name)
    } else if (op == "COPY") {
      from = 0; m = 0
      for (j = i + 1; j <= n; j++) {
        if (w[j] == "") continue
        if (w[j] ~ /^--from=/) from = 1
        if (w[j] ~ /^--/) continue
        src[++m] = w[j]
      }
      if (!from) for (j = 1; j < m; j++) print "C", st, src[j]
    } else if (op == "RUN") {
      inst = 0
      for (j = i + 1; j <= n; j++) {
        t = w[j]
        if (t == "&&" || t == "||" || t == ";" || t == "|") { inst = 0; continue }
        if (inst && t !~ /^-/ && t != "") { print "P", st, t; continue }
        if ((t == "install") && (w[j - 1] == "apt-get" || w[j - 1] == "apt" || w[j - 1] ~ /^-/)) inst = 1
        if (t == "cmake") print "M", st
        if (t ~ /^-D[A-Za-z_0-9]+=/) {
          v = substr(t, 3); k = v; sub(/=.*/, "", k); sub(/^[^=]*=/, "", v)
          print "D", st, k, toupper(v)
        }
      }
    }
  }' "$dockerfile")

nstages=$(awk '$1 == "S"' <<<"$parsed" | wc -l)
[ "$nstages" -ge 2 ] || die "$dockerfile: expected a build stage and a runtime stage, found $nstages stage(s)"
build_st=$(awk '$1 == "M" { print $2; exit }' <<<"$parsed")
[ -n "$build_st" ] || die "$dockerfile: no stage runs cmake (the build stage)"
run_st=$nstages
[ "$run_st" != "$build_st" ] || die "$dockerfile: the build stage is the last one; no runtime stage"
stage_name() { awk -v s="$1" '$1 == "S" && $2 == s { print $3 }' <<<"$parsed"; }
stage_pkgs() { awk -v s="$1" '$1 == "P" && $2 == s { print $3 }' <<<"$parsed" | sort -u; }

# The dependency closure of a stage's packages: one name a line (virtual
# packages and their providers included; :any and :amd64 qualifiers dropped).
closure() {
  local pkgs
  mapfile -t pkgs < <(stage_pkgs "$1")
  [ ${#pkgs[@]} -gt 0 ] || die "stage $(stage_name "$1"): installs no package with apt-get install"
  local out
  if ! out=$(apt-cache "${apt_opts[@]}" depends --recurse --no-recommends --no-suggests \
               --no-conflicts --no-breaks --no-replaces --no-enhances "${pkgs[@]}" 2>&1); then
    die "stage $(stage_name "$1"): apt-cache cannot resolve its packages:" \
        "$(grep -E '^(E|W):' <<<"$out" | head -3 | tr '\n' ' ')"
  fi
  local names
  names=$(awk '/^[^ ]/ { p = $1; gsub(/[<>]/, "", p); sub(/:.*/, "", p); print p }' <<<"$out" | sort -u)
  # an unknown name is only a warning to apt-cache, and absent from its answer
  local p
  for p in "${pkgs[@]}"; do
    grep -qxF "${p%%[:=]*}" <<<"$names" ||
      die "stage $(stage_name "$1"): apt-cache cannot resolve its packages: it knows no $p"
  done
  echo "$names"
}
# both at once: each apt-cache run takes about a second
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
(closure "$run_st" >"$tmp/run") &
build_closure=$(closure "$build_st")
wait $! || exit 1
run_closure=$(cat "$tmp/run")
declare -A in_build=() in_run=()
while read -r p; do in_build[$p]=1; done <<<"$build_closure"
while read -r p; do in_run[$p]=1; done <<<"$run_closure"

# The package that ships a file: dpkg -S on the path, its /usr-merged twin or
# its target. dpkg -S is slow to start, so owners() asks once for every path
# (and its variants) and owner() reads the answers.
declare -A own=() alias_of=()
owners() {
  local paths=() p q r
  for p in "$@"; do
    [ -z "${alias_of[$p]+x}" ] || continue
    r=$(readlink -f "$p" 2>/dev/null || true)
    alias_of[$p]="$p ${p#/usr} /usr$p $r"
    for q in ${alias_of[$p]}; do
      [ -z "${own[$q]+x}" ] && paths+=("$q") && own[$q]=
    done
  done
  [ ${#paths[@]} -gt 0 ] || return 0
  local pkgs path
  while IFS=$'\t' read -r pkgs path; do
    [ -n "${own[$path]+x}" ] && own[$path]=${pkgs%%[,:]*}
  done < <(dpkg -S "${paths[@]}" 2>/dev/null | grep -v '^diversion by' | sed 's/: \(\/.*\)$/\t\1/')
}
owner() { # after owners() was asked about the path
  local q
  for q in ${alias_of[$1]:-}; do
    [ -n "${own[$q]:-}" ] && { echo "${own[$q]}"; return; }
  done
}

# --- (a) the build stage --------------------------------------------------------
mapfile -t sources < <(awk -v s="$build_st" '$1 == "C" && $2 == s { print $3 }' <<<"$parsed")
[ ${#sources[@]} -gt 0 ] || die "build stage: copies no sources"
cmake_files=()
for s in "${sources[@]}"; do
  s=${s%/}
  if [ -d "$s" ]; then
    while IFS= read -r f; do cmake_files+=("$f"); done \
      < <(find "$s" \( -name CMakeLists.txt -o -name '*.cmake' \) -type f | sort)
  elif [ -f "$s" ] && [[ "$s" == *CMakeLists.txt || "$s" == *.cmake ]]; then
    cmake_files+=("$s")
  fi
done
[ ${#cmake_files[@]} -gt 0 ] || die "build stage: no CMakeLists.txt among its COPY sources"

# option() defaults, then the stage's -D values over them
defs=$(cat "${cmake_files[@]}" | sed -n 's/^[[:space:]]*option([[:space:]]*\([A-Za-z_0-9]*\)[[:space:]].*[[:space:]]\(ON\|OFF\))[[:space:]]*$/\1 \2/Ip')
defs+=$'\n'$(awk -v s="$build_st" '$1 == "D" && $2 == s { print $3, $4 }' <<<"$parsed")

# Requirements, one a line: KIND NAME FILE. An if(VAR) or if(NOT VAR) on a
# known option that is off skips its block; any other condition counts as on.
reqs=$(DEFS=$defs awk '
  BEGIN {
    n = split(ENVIRON["DEFS"], d, "\n")
    for (i = 1; i <= n; i++) { split(d[i], kv, " "); if (kv[1] != "") val[kv[1]] = (kv[2] == "ON" || kv[2] == "TRUE" || kv[2] == "1") }
    depth = 0; live[0] = 1
  }
  FNR == 1 { file = FILENAME }
  {
    sub(/#.*/, "")
    buf = buf " " $0
    # complete commands: name(args) with balanced parentheses
    while (match(buf, /[A-Za-z_][A-Za-z_0-9]*[[:space:]]*\(/)) {
      start = RSTART; open = RSTART + RLENGTH - 1
      lvl = 0; cl = 0
      for (k = open; k <= length(buf); k++) {
        c = substr(buf, k, 1)
        if (c == "(") lvl++
        else if (c == ")") { lvl--; if (lvl == 0) { cl = k; break } }
      }
      if (!cl) break
      cmd = tolower(substr(buf, start, open - start)); gsub(/[[:space:]]/, "", cmd)
      args = substr(buf, open + 1, cl - open - 1)
      buf = substr(buf, cl + 1)
      na = split(args, a, /[[:space:]]+/); m = 0
      for (k = 1; k <= na; k++) if (a[k] != "") b[++m] = a[k]
      if (cmd == "if") {
        on = 1
        if (m == 1 && (b[1] in val)) on = val[b[1]]
        if (m == 2 && toupper(b[1]) == "NOT" && (b[2] in val)) on = !val[b[2]]
        depth++; cond[depth] = on; live[depth] = live[depth - 1] && on
      } else if (cmd == "elseif" || cmd == "else") {
        live[depth] = live[depth - 1] && !cond[depth]
      } else if (cmd == "endif") {
        if (depth > 0) depth--
      } else if (live[depth]) {
        if (cmd == "pkg_check_modules") {
          for (k = 2; k <= m; k++) {
            if (b[k] ~ /^(REQUIRED|QUIET|IMPORTED_TARGET|GLOBAL|NO_CMAKE_PATH|NO_CMAKE_ENVIRONMENT_PATH)$/) continue
            mod = b[k]; sub(/[<>=].*/, "", mod)
            print "pkgconfig", mod, file
          }
        } else if (cmd == "find_package") {
          print "package", b[1], file
        } else if (cmd == "find_library" || cmd == "find_path" || cmd == "find_program") {
          kind = substr(cmd, 6)
          for (k = 2; k <= m; k++) {
            if (b[k] == "NAMES") continue
            if (b[k] ~ /^[A-Z_]+$/) break
            print kind, b[k], file
          }
        }
      }
    }
  }' "${cmake_files[@]}" | sort -u)

multiarch=$(cc -print-multiarch 2>/dev/null || true)
# KIND NAME -> the file on this machine that satisfies it (empty: none)
locate() {
  case "$1" in
    pkgconfig) pkg-config --path "$2" 2>/dev/null || true ;;
    library)
      local f
      f=$(cc -print-file-name="lib$2.so")
      [ "$f" != "lib$2.so" ] && [ -e "$f" ] && realpath -s "$f" ;;
    path)
      local d
      for d in /usr/include ${multiarch:+/usr/include/$multiarch} /usr/local/include; do
        [ -e "$d/$2" ] && { echo "$d/$2"; return; }
      done ;;
    program) command -v "$2" || true ;;
    package)
      case "$2" in
        PkgConfig) command -v pkg-config || true ;;
        Threads) echo /usr/include/pthread.h ;;
        *) dpkg -S "*/$2Config.cmake" "*/$(tr '[:upper:]' '[:lower:]' <<<"$2")-config.cmake" 2>/dev/null \
             | awk -F': ' 'NR == 1 { print $2 }' ;;
      esac ;;
  esac
}

# First every requirement and the file that meets it, then one dpkg -S for
# all, then the verdicts. The pkg-config modules come with every module their
# .pc files require, recursively (one pkg-config --digraph: asking module by
# module takes about a second each for grpc's tree).
items=() # KIND<TAB>NAME<TAB>FROM<TAB>FILE
declare -A from_of=()
mods=()
while read -r kind name from; do
  [ -n "$kind" ] || continue
  if [ "$kind" = pkgconfig ]; then
    [ -n "${from_of[$name]:-}" ] || mods+=("$name")
    from_of[$name]=$from
  else
    items+=("$kind"$'\t'"$name"$'\t'"$from"$'\t'"$(locate "$kind" "$name")")
  fi
done <<<"$reqs"
if [ ${#mods[@]} -gt 0 ]; then
  present=("${mods[@]}")
  if ! pkg-config --exists "${mods[@]}" 2>/dev/null; then # which ones are missing
    present=()
    for m in "${mods[@]}"; do
      if pkg-config --exists "$m" 2>/dev/null; then
        present+=("$m")
      else
        items+=("pkgconfig"$'\t'"$m"$'\t'"${from_of[$m]}"$'\t')
      fi
    done
  fi
  if [ ${#present[@]} -gt 0 ]; then
    # edges "A" -- "B": A is required by B (virtual:world: asked for by name)
    while read -r m parent; do
      [ -n "${from_of[$m]:-}" ] || from_of[$m]="required by $parent.pc"
      [ "$parent" = virtual:world ] || present+=("$m")
    done < <(pkg-config --digraph "${present[@]}" |
             awk -F'"' 'NF >= 5 && $3 ~ /--/ && $2 != "virtual:world" && !($2 in seen) { seen[$2] = 1; print $2, $4 }')
    declare -A pc_file=()
    while IFS= read -r f; do
      b=${f##*/}
      pc_file[${b%.pc}]=$f
    done < <(pkg-config --path "${present[@]}")
    for m in "${present[@]}"; do
      items+=("pkgconfig"$'\t'"$m"$'\t'"${from_of[$m]}"$'\t'"${pc_file[$m]:-}")
    done
  fi
fi
[ ${#items[@]} -gt 0 ] || die "build stage: found no pkg_check_modules or find_* call in ${cmake_files[*]}"
files=()
for it in "${items[@]}"; do
  IFS=$'\t' read -r _ _ _ file <<<"$it"
  [ -n "$file" ] && files+=("$file")
done
owners "${files[@]}"
for it in "${items[@]}"; do
  IFS=$'\t' read -r kind name from file <<<"$it"
  case "$kind" in
    pkgconfig) what="pkg-config module $name" ;;
    package) what="find_package($name)" ;;
    *) what="find_$kind($name)" ;;
  esac
  if [ -z "$file" ]; then
    fail "build stage: $what ($from) is not installed on this machine, so its package cannot be" \
         "told (run scripts/deps.sh)"
    continue
  fi
  pkg=$(owner "$file")
  [ "$verbose" = 0 ] || echo "build stage: $what ($from): $file, package ${pkg:-none}"
  if [ -z "$pkg" ]; then
    fail "build stage: $what ($from): $file belongs to no package"
  elif [ -z "${in_build[$pkg]:-}" ]; then
    fail "build stage: $what ($from) needs package $pkg (it ships $file), which the build stage" \
         "does not install: add $pkg to its apt-get install in $dockerfile"
  fi
done
checked=${#items[@]}

# --- (b) the runtime stage ------------------------------------------------------
libs=() # BINARY<TAB>PATH, each library once
declare -A lib_seen=()
for b in striked strike; do
  out=$(ldd "$bindir/$b") || die "ldd $bindir/$b failed"
  while read -r lib; do
    fail "runtime stage: $b needs $lib, which ldd cannot find on this machine"
  done < <(awk '/not found/ { print $1 }' <<<"$out")
  while read -r path; do
    [ -n "$path" ] && [ -z "${lib_seen[$path]:-}" ] || continue
    lib_seen[$path]=1
    libs+=("$b"$'\t'"$path")
  done < <(awk '$2 == "=>" && $3 ~ /^\// { print $3 } $1 ~ /^\// { print $1 }' <<<"$out")
done
nlibs=${#libs[@]}
owners $(printf '%s\n' "${libs[@]}" | cut -f2)
for it in "${libs[@]}"; do
  IFS=$'\t' read -r b path <<<"$it"
  pkg=$(owner "$path")
  [ "$verbose" = 0 ] || echo "runtime stage: $b loads $path, package ${pkg:-none}"
  if [ -z "$pkg" ]; then
    fail "runtime stage: $b loads $path, which belongs to no package"
  elif [ -z "${in_run[$pkg]:-}" ]; then
    fail "runtime stage: $b loads $path from package $pkg, which the runtime stage does not" \
         "install: add $pkg to its apt-get install in $dockerfile"
  fi
done

if [ "$fails" -gt 0 ]; then
  echo "check-docker: $dockerfile: $fails gap(s)" >&2
  exit 1
fi
echo "check-docker: $dockerfile: build stage \"$(stage_name "$build_st")\" has all $checked" \
     "requirements of ${#cmake_files[@]} CMake files ($(wc -l <<<"$build_closure") packages in its" \
     "closure); runtime stage \"$(stage_name "$run_st")\" has the $nlibs libraries of striked and" \
     "strike ($(wc -l <<<"$run_closure") packages)"
