#!/usr/bin/env bash
# The workspace's MSRV toolchain (Rust 1.85, `rust-version` in Cargo.toml) for this
# machine, without rustup: Debian trixie's rustc and cargo 1.85 unpacked into a
# private prefix (the system is not touched) and started through trixie's own
# ld-linux (they need glibc >= 2.39; Debian 12 has 2.36).
#
# Usage: scripts/msrv-toolchain.sh [DIR]    (DIR defaults to ~/.cache/cuda-rs-msrv)
# then:  . DIR/env.sh && cargo check -p cudars-core --all-features
# On a Debian or Ubuntu x86_64 host with apt-get and dpkg; the packages are
# downloaded with a private apt state under DIR and unpacked there (no root
# needed, nothing installed), from the Debian archive the system's apt uses
# (DEBIAN_MIRROR overrides it). MSRV_VERSION (default 1.85) is the version the
# unpacked rustc must have; the script fails if trixie's is another. A second
# run reuses what the first unpacked.
set -euo pipefail

W=${1:-${MSRV_DIR:-$HOME/.cache/cuda-rs-msrv}}
WANT=${MSRV_VERSION:-1.85}
mkdir -p "$W"
W=$(cd "$W" && pwd)
R=$W/root

if [ ! -x "$R/usr/bin/rustc" ]; then
  # The same Debian archive the system's apt uses, for the trixie suite.
  DEBIAN_MIRROR=${DEBIAN_MIRROR:-$( { cat /etc/apt/sources.list.d/*.sources /etc/apt/sources.list 2>/dev/null || true; } \
    | awk '/^URIs:/{print $2; exit} /^deb /{for(i=2;i<=NF;i++) if ($i ~ /^https?:/) {print $i; exit}}')}
  [ -n "$DEBIAN_MIRROR" ] || { echo "msrv-toolchain: set DEBIAN_MIRROR to a Debian archive" >&2; exit 1; }
  A=$W/apt
  mkdir -p "$A/lists/partial" "$A/cache/archives/partial" "$R"
  echo "deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] $DEBIAN_MIRROR trixie main" > "$A/sources.list"
  : > "$A/empty-status"
  o=(-oDir::Etc::SourceList="$A/sources.list" -oDir::Etc::SourceParts=/dev/null
     -oDir::Etc::Preferences=/dev/null -oDir::Etc::PreferencesParts=/dev/null
     -oDir::State::Lists="$A/lists" -oDir::Cache="$A/cache" -oDir::Cache::Archives="$A/cache/archives"
     -oDir::State::status="$A/empty-status" -oAPT::Install-Recommends=0)
  [ "$(id -u)" = 0 ] && o+=(-oAPT::Sandbox::User=root)
  apt-get "${o[@]}" -qq update
  # The dependency closure as if nothing were installed, minus the C toolchain:
  # the system's cc and binutils link (a `cargo check` links only build scripts).
  EXCL='^(gcc|gcc-[0-9]+|gcc-.*-linux-gnu|cpp|cpp-.*|binutils.*|libbinutils|libctf.*|libsframe.*|libgprofng.*|libjansson.*|libc-dev-bin|libc6-dev|linux-libc-dev|libcrypt-dev|rpcsvc-proto|libisl.*|libmpfr.*|libmpc.*|libcc1-.*|libgomp.*|libitm.*|libatomic.*|libasan.*|liblsan.*|libtsan.*|libubsan.*|libhwasan.*|libquadmath.*|libgcc-[0-9]+-dev)$'
  pkgs=$(apt-get "${o[@]}" -s install rustc cargo | awk '/^Inst /{print $2}' | grep -vE "$EXCL")
  (cd "$A/cache/archives" && apt-get "${o[@]}" -qq download $pkgs)
  for f in "$A"/cache/archives/*.deb; do dpkg -x "$f" "$R"; done
  rm -rf "$A/cache/archives"
fi

mkdir -p "$W/bin"
for t in rustc rustdoc cargo; do
  cat > "$W/bin/$t" <<EOF
#!/bin/sh
exec "$R/usr/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2" --argv0 "\$0" --library-path "$R/usr/lib/x86_64-linux-gnu:$R/usr/lib/rustlib/x86_64-unknown-linux-gnu/lib" "$R/usr/bin/$t" "\$@"
EOF
  chmod +x "$W/bin/$t"
done
cat > "$W/env.sh" <<EOF
# source me: Rust $WANT (Debian trixie) first on PATH, for \`cargo\` and the rustc it runs
export PATH="$W/bin:\$PATH"
export RUSTC="$W/bin/rustc" RUSTDOC="$W/bin/rustdoc" CARGO="$W/bin/cargo"
unset RUSTUP_TOOLCHAIN RUSTC_BOOTSTRAP
EOF
got=$("$W/bin/rustc" --version)
case "$got" in
  "rustc $WANT".*) echo "msrv-toolchain: $got, $("$W/bin/cargo" --version) in $W (source $W/env.sh)" ;;
  *) echo "msrv-toolchain: wanted Rust $WANT, Debian trixie has: $got" >&2; exit 1 ;;
esac
