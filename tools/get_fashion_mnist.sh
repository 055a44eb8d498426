#!/bin/sh
# get_fashion_mnist.sh DIR - make the four Fashion-MNIST files available.
#
# Does nothing when DIR, or the system copy in /usr/share/datasets/fashion-mnist (Debian's
# dataset-fashion-mnist package; examples/fashion_mnist_mlp finds it by itself), already has
# them. Otherwise, without root, downloads the Debian package with `apt-get download`,
# unpacks it with `dpkg-deb -x` and copies the files into DIR. If that fails, says where to
# get them by hand and exits non-zero.
set -eu

FILES="train-images-idx3-ubyte train-labels-idx1-ubyte t10k-images-idx3-ubyte t10k-labels-idx1-ubyte"
SYSTEM_DIR=/usr/share/datasets/fashion-mnist
URL=https://github.com/zalandoresearch/fashion-mnist/raw/master/data/fashion

if [ $# -ne 1 ] || [ -z "$1" ]; then
    echo "usage: $0 DIR" >&2
    exit 2
fi
DIR=$1

# has_all D: every file is in D, gzip'd or plain.
has_all() {
    for f in $FILES; do
        [ -s "$1/$f.gz" ] || [ -s "$1/$f" ] || return 1
    done
    return 0
}

if has_all "$DIR"; then
    echo "get_fashion_mnist: the dataset is already in $DIR"
    exit 0
fi
if has_all "$SYSTEM_DIR"; then
    echo "get_fashion_mnist: the dataset is installed in $SYSTEM_DIR (the example finds it there)"
    exit 0
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
    cat >&2 <<EOF
(from https://github.com/zalandoresearch/fashion-mnist), or as root:
    apt-get install dataset-fashion-mnist
EOF
    exit 1
}

command -v apt-get >/dev/null 2>&1 || manual "no apt-get here"
command -v dpkg-deb >/dev/null 2>&1 || manual "no dpkg-deb here"

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

mkdir -p "$DIR" || manual "cannot create $DIR"
for f in $FILES; do
    if [ -s "$TMP/root$SYSTEM_DIR/$f.gz" ]; then
        cp "$TMP/root$SYSTEM_DIR/$f.gz" "$DIR/" || manual "cannot copy into $DIR"
    else
        cp "$TMP/root$SYSTEM_DIR/$f" "$DIR/" || manual "cannot copy into $DIR"
    fi
done
echo "get_fashion_mnist: the dataset is now in $DIR"
