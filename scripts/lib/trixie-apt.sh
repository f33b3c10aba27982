# Sourced by the install scripts: a private apt folder that reads Debian trixie (which packages
# what bookworm lacks: pgvector, compose v2) without ever editing /etc/apt.
# trixie_apt TYPE   (TYPE: deb or deb-src) creates the folder in $APT_DIR, sets APT_OPTS and runs
# `apt-get update` on it; the caller removes $APT_DIR.
trixie_apt() {
  local type="$1"
  APT_DIR="$(mktemp -d /tmp/trixie-apt.XXXXXX)"
  chmod 755 "$APT_DIR"
  mkdir -p "$APT_DIR/sources.list.d" "$APT_DIR/lists/partial" "$APT_DIR/cache/archives/partial"
  local uris
  uris="$(awk '/^URIs:/ {print $2; exit}' /etc/apt/sources.list.d/debian.sources)"
  cat > "$APT_DIR/sources.list.d/trixie.sources" <<SRC
Types: ${type}
URIs: ${uris}
Suites: trixie
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
SRC
  APT_OPTS=(-o Dir::Etc::SourceList=/dev/null -o "Dir::Etc::SourceParts=$APT_DIR/sources.list.d"
            -o "Dir::State::Lists=$APT_DIR/lists" -o "Dir::Cache=$APT_DIR/cache")
  apt-get "${APT_OPTS[@]}" update >/dev/null
}
