# Shared paths for the interop scripts. Sourced, not executed.
# Every path is relative to the repository root unless given absolute.
interop_dir="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo_root="$(cd "$interop_dir/../.." && pwd)"

interop_abs() {
    case "$1" in
        /*) printf '%s\n' "$1" ;;
        *) printf '%s\n' "$repo_root/$1" ;;
    esac
}

venv_dir="$(interop_abs "${INTEROP_VENV:-.build-interop/venv}")"
state_dir="$(interop_abs "${INTEROP_STATE_DIR:-.build-interop/state}")"
port="${INTEROP_PORT:-8765}"
base_url="http://127.0.0.1:$port"
pid_file="$state_dir/server-$port.pid"
log_file="$state_dir/server-$port.log"
py="$venv_dir/bin/python"
project_dir="$interop_dir/project"
