#!/bin/sh
# get_fashion_mnist.sh [--gunzip] DIR - make the four Fashion-MNIST files available.
#
# Without --gunzip (examples/fashion_mnist_mlp built with zlib reads .gz and plain files):
# does nothing when DIR, or the system copy in /usr/share/datasets/fashion-mnist (Debian's
# dataset-fashion-mnist package; the example finds it by itself), already has them.
#
# With --gunzip (the example built with -DFMNIST_NO_ZLIB reads plain IDX files only; `make
# demo` passes it when zlib is missing): DIR must end up with the plain files. Those gzip'd
# only in DIR are decompressed there; when DIR lacks some and the system copy has them, they
# are copied into DIR, decompressed with `gzip -dc` where the system copy has only .gz.
#
# Otherwise, without root, downloads the Debian package with `apt-get download`, unpacks it
# with `dpkg-deb -x` and writes the files into DIR decompressed (plain files suit either
# build). If that fails, says where to get them by hand and exits non-zero.
set -eu

FILES="train-images-idx3-ubyte train-labels-idx1-ubyte t10k-images-idx3-ubyte t10k-labels-idx1-ubyte"
SYSTEM_DIR=/usr/share/datasets/fashion-mnist
URL=https://github.com/zalandoresearch/fashion-mnist/raw/master/data/fashion

usage() {
    echo "usage: $0 [--gunzip] DIR" >&2
    exit 2
}
PLAIN=0
if [ $# -ge 1 ] && [ "$1" = --gunzip ]; then
    PLAIN=1
    shift
fi
if [ $# -ne 1 ] || [ -z "$1" ]; then
    usage
fi
case $1 in -*) usage ;; esac
DIR=$1

# has_all D: every file is in D, gzip'd or plain.
has_all() {
    for f in $FILES; do
        [ -s "$1/$f.gz" ] || [ -s "$1/$f" ] || return 1
    done
    return 0
}
# has_plain D: every file is in D uncompressed.
has_plain() {
    for f in $FILES; do
        [ -s "$1/$f" ] || return 1
    done
    return 0
}

# install_from SRC: each file missing uncompressed from DIR is copied from SRC/f or
# decompressed from SRC/f.gz (SRC may be DIR itself). Writes to a temporary name first, so
# that an interrupted run leaves no truncated file behind. Returns non-zero on failure.
install_from() {
    mkdir -p "$DIR" || return 1
    for f in $FILES; do
        [ -s "$DIR/$f" ] && continue
        if [ -s "$1/$f" ]; then
            cp "$1/$f" "$DIR/$f.part" || { rm -f "$DIR/$f.part"; return 1; }
        else
            echo "get_fashion_mnist: gzip -dc $1/$f.gz > $DIR/$f"
            gzip -dc "$1/$f.gz" >"$DIR/$f.part" || { rm -f "$DIR/$f.part"; return 1; }
        fi
        mv -f "$DIR/$f.part" "$DIR/$f" || return 1
    done
    return 0
}

if [ $PLAIN = 1 ]; then
    command -v gzip >/dev/null 2>&1 || { echo "get_fashion_mnist: --gunzip needs gzip" >&2; exit 1; }
    if has_plain "$DIR"; then
        echo "get_fashion_mnist: the dataset is already in $DIR (uncompressed)"
        exit 0
    fi
    for src in "$DIR" "$SYSTEM_DIR"; do
        if has_all "$src"; then
            install_from "$src" || { echo "get_fashion_mnist: cannot write the uncompressed files into $DIR" >&2; exit 1; }
            echo "get_fashion_mnist: the dataset is now in $DIR (uncompressed, from $src)"
            exit 0
        fi
    done
else
    if has_all "$DIR"; then
        echo "get_fashion_mnist: the dataset is already in $DIR"
        exit 0
    fi
    if has_all "$SYSTEM_DIR"; then
        echo "get_fashion_mnist: the dataset is installed in $SYSTEM_DIR (the example finds it there)"
        exit 0
    fi
fi

manual() {
    cat >&2 <<EOF
get_fashion_mnist: could not fetch the dataset ($1).
Get the four files by hand into $DIR:
    mkdir -p $DIR && cd $DIR
EOF
    for f in $FILES; do
        echo "    curl -fLO $URL/$f.gz" >&2
    done
    if [ $PLAIN = 1 ]; then
        echo "    gzip -d *.gz    # this build of the example reads uncompressed files only" >&2
    fi
    cat >&2 <<EOF
(from https://github.com/zalandoresearch/fashion-mnist), or as root:
    apt-get install dataset-fashion-mnist
EOF
    exit 1
}

command -v apt-get >/dev/null 2>&1 || manual "no apt-get here"
command -v dpkg-deb >/dev/null 2>&1 || manual "no dpkg-deb here"
command -v gzip >/dev/null 2>&1 || manual "no gzip here"

TMP=$(mktemp -d "${TMPDIR:-/tmp}/fashion-mnist.XXXXXX") || manual "mktemp failed"
trap 'rm -rf "$TMP"' EXIT INT TERM

echo "get_fashion_mnist: downloading the Debian package dataset-fashion-mnist"
(cd "$TMP" && apt-get download dataset-fashion-mnist) || manual "apt-get download dataset-fashion-mnist failed"
DEB=
for f in "$TMP"/dataset-fashion-mnist_*.deb; do
    [ -f "$f" ] && DEB=$f
done
[ -n "$DEB" ] || manual "apt-get download left no .deb"
dpkg-deb -x "$DEB" "$TMP/root" || manual "dpkg-deb -x failed"
has_all "$TMP/root$SYSTEM_DIR" || manual "the package does not hold the expected files"

install_from "$TMP/root$SYSTEM_DIR" || manual "cannot write into $DIR"
echo "get_fashion_mnist: the dataset is now in $DIR (uncompressed)"
