# Sourced by the CI scripts. copy_source_tree ROOT DEST: copy the source tree of ROOT
# (tracked and untracked-but-not-ignored files) into DEST, so that a build there sees
# no stale generated C or shared objects from an in-place build and writes nothing
# into the work tree.
copy_source_tree() {
    local root=$1 dest=$2
    mkdir -p "$dest"
    if git -C "$root" rev-parse --is-inside-work-tree >/dev/null 2>&1; then
        git -C "$root" ls-files -co --exclude-standard -z \
            | (cd "$root" && xargs -0 -r sh -c 'for f; do [ -f "$f" ] && printf "%s\0" "$f"; done' sh) \
            | (cd "$root" && tar --null -T - -cf -) | tar -xf - -C "$dest"
    else
        tar -C "$root" --exclude=./.git --exclude='./.venv*' --exclude=./build \
            --exclude=./dist --exclude='*.so' --exclude='*.c' -cf - . | tar -xf - -C "$dest"
    fi
}

# make_work_dir NAME KEEP_VARIABLE: set WORK to a new temporary directory named
# after NAME, removed when the script exits unless the environment variable named
# KEEP_VARIABLE is 1 (then its path is printed).
make_work_dir() {
    local name=$1 keep=$2
    WORK="$(mktemp -d "${TMPDIR:-/tmp}/gbc-core-$name.XXXXXX")"
    if [ "${!keep:-0}" = "1" ]; then
        echo "$name build: keeping $WORK"
    else
        trap 'rm -rf "$WORK"' EXIT
    fi
}
