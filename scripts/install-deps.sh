#!/usr/bin/env bash
# Installs the Debian 12 packages mtpe needs to build, test and run.
# Idempotent; uses sudo when not root.  Skips apt when everything is there.
set -euo pipefail
pkgs=(
  build-essential cmake pkg-config git python3
  libopenblas-dev zlib1g-dev libyaml-dev          # engine: BLAS, zip/deflate, model.yml
  libsqlite3-dev sqlite3                          # db: the store of edits
  libncurses-dev libreadline-dev                  # ui: the editor
  libsentencepiece-dev sentencepiece              # models: vocabularies, spm_train
  libxml2-dev libxml2-utils gettext               # XLIFF/TMX, msgfmt --check in tests
  tmux                                            # end-to-end editor tests
  libhunspell-dev hunspell-de-de hunspell-en-us   # spell checking in the editor
  libopenmpi-dev openmpi-bin                      # mpirun train/translate (optional)
)
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all ${#pkgs[@]} packages present"
  exit 0
fi
echo "install-deps: installing ${missing[*]}"
SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO="sudo"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
