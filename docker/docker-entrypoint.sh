#!/bin/sh
# The image's entry point, as the official redis image's docker-entrypoint.sh behaves:
#   docker run raxdb                                    raxdb-server with the container defaults
#   docker run raxdb --appendonly yes                   flags only: raxdb-server with those flags
#   docker run raxdb /usr/local/etc/redis/redis.conf    a mounted config file (then flags, if any)
#   docker run raxdb redis-server --port 7000           redis-server is raxdb-server here
#   docker run -it raxdb sh                             anything else runs as given
# The server runs as the unprivileged user `raxdb` (the container starts as root, takes ownership
# of /data's files and drops to that user with setpriv), unless the container was started as
# another user (`docker run --user`) or RAXDB_KEEP_USER=1 says to stay (the tests run this script
# as a plain process).  The last step is an `exec`: the server becomes PID 1, so `docker stop`'s
# SIGTERM reaches it and it saves (where save points or the AOF are configured) before it exits.
set -e

# Flags first (`-`, `--appendonly`) or a file ending in .conf first: they are the server's arguments.
if [ "${1#-}" != "$1" ] || [ "${1%.conf}" != "$1" ]; then
	set -- raxdb-server "$@"
fi
if [ "$1" = redis-server ]; then
	shift
	set -- raxdb-server "$@"
fi

if [ "$1" = raxdb-server ]; then
	# As root: this script again, as the user raxdb, with the same arguments.
	if [ "$(id -u)" = 0 ] && [ "${RAXDB_KEEP_USER:-}" != 1 ]; then
		find . \! -user raxdb -exec chown raxdb '{}' +
		exec setpriv --reuid=raxdb --regid=raxdb --init-groups "$0" "$@"
	fi
	shift
	# The container default the official image compiles in: protected mode off, since the host's
	# connections arrive from outside the loopback.  It goes after a config file (a config file
	# must come first) and before the user's flags, so that the file or a flag that sets
	# protected-mode wins.
	if [ -n "${1:-}" ] && [ "${1#-}" = "$1" ]; then
		conf=$1
		shift
		if grep -qiE '^[[:space:]]*protected-mode[[:space:]]' "$conf" 2>/dev/null; then
			set -- raxdb-server "$conf" "$@"
		else
			set -- raxdb-server "$conf" --protected-mode no "$@"
		fi
	else
		set -- raxdb-server --protected-mode no "$@"
	fi

	# Files the server writes (dump.rdb, the AOF) readable by its user alone, unless the
	# container was given a umask of its own.
	if [ "$(umask)" = 0022 ]; then
		umask 0077
	fi
fi

exec "$@"
