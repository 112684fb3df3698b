#!/usr/bin/env bash
# Installs what ringx needs to build, test and benchmark, from the
# distribution's packages (Debian 12 / Ubuntu 22.04 and later).
set -euo pipefail

packages=(build-essential autoconf automake libtool pkg-config
          libopenmpi-dev openmpi-bin libucx-dev check valgrind gnuplot-nox)

missing=()
for p in "${packages[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
    echo "install-deps: all packages present"
    exit 0
fi

sudo=""
if [ "$(id -u)" -ne 0 ]; then
    sudo="sudo"
fi
echo "install-deps: installing ${missing[*]}"
$sudo apt-get update -qq
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
