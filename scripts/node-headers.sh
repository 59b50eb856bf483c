# Sourced by the install steps: native add-ons (better-sqlite3, code-server's argon2 and node-pty) compile
# with node-gyp, which otherwise downloads Node's headers from the internet. Point it at the headers of the
# Node that runs the build when they are installed locally (Debian's nodejs, the official tarball, nvm).
if [ -z "${npm_config_nodedir:-}" ]; then
  _cairn_node_prefix=$(node -p 'require("path").resolve(process.execPath, "..", "..")' 2>/dev/null || true)
  if [ -n "$_cairn_node_prefix" ] && [ -f "$_cairn_node_prefix/include/node/node_version.h" ]; then
    export npm_config_nodedir="$_cairn_node_prefix"
  fi
  unset _cairn_node_prefix
fi
