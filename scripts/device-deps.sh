# Sourced by scripts/gpu-check and scripts/gpu-check study (bash): makes the build
# dependencies available and sets CMAKE_EXTRA, an array of cmake arguments.
# Installed Debian packages are used when present; otherwise, on a machine
# without apt access (the lent H200), the .deb files in .devdeps/ (fetch them
# with scripts/fetch-device-deps) are unpacked into a private prefix.
# Expects ROOT (the checkout, current directory) and a summary function.
CMAKE_EXTRA=()
missing=0
for p in libeigen3-dev nlohmann-json3-dev libcli11-dev libstb-dev libtinyexr-dev libgtest-dev; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing=1
done
if [ "$missing" = 1 ]; then
  if compgen -G ".devdeps/*.deb" > /dev/null; then
    PFX=/tmp/fusedngp-deps
    # Unpacked once per set of .deb files (names, sizes, times in the stamp):
    # a later gpu-check in the same call, maybe beside a running one, reuses
    # the prefix instead of pulling it from under that one's tests.
    stamp="$(ls -l .devdeps/*.deb)"
    if [ "$(cat "$PFX/.unpacked" 2>/dev/null)" != "$stamp" ]; then
      rm -rf "$PFX"
      for f in .devdeps/*.deb; do dpkg -x "$f" "$PFX"; done
      echo "$stamp" > "$PFX/.unpacked"
    fi
    LIBDIR="$PFX/usr/lib/x86_64-linux-gnu"
    export PKG_CONFIG_SYSROOT_DIR="$PFX" PKG_CONFIG_PATH="$LIBDIR/pkgconfig"
    export LD_LIBRARY_PATH="$LIBDIR${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
    CMAKE_EXTRA=(-DCMAKE_PREFIX_PATH="$PFX/usr" -DCMAKE_INCLUDE_PATH="$PFX/usr/include"
                 -DCMAKE_LIBRARY_PATH="$LIBDIR")
    summary "deps: unpacked $(ls .devdeps/*.deb | wc -l) carried packages into $PFX"
  else
    scripts/install-deps
  fi
fi

