"""``privloss serve``: run the privacy query service (see docs/service.md).

* ``privloss serve --config service.toml [--host 127.0.0.1] [--port 8000] [--workers N]``
* ``privloss serve --demo``: synthetic data, a temporary ledger, one analyst;
  prints the analyst's token and the dashboard URL;
* ``privloss serve add-analyst NAME --config service.toml``: create (or
  re-issue) NAME's token; printed once, stored only as an argon2id hash.
* ``privloss serve check --config service.toml``: everything start-up checks
  (the file, every dataset's source, query and declared columns, read into
  its snapshot; plan files), without serving.

Bad input (a configuration that cannot be served too): one line on stderr,
exit 2.  Needs the ``service`` extra.
"""

from __future__ import annotations

import os
import sys

from privloss.cli._common import CommandError

HELP = "run the privacy query service (HTTP API and dashboard)"


def register(subparsers) -> None:
    import argparse
    parser = subparsers.add_parser(
        "serve", help=HELP, formatter_class=argparse.RawDescriptionHelpFormatter,
        description="Run the privacy query service: analysts send top-k and histogram "
                    "parameters over HTTP,\nthe service charges the budget ledger first and "
                    "answers with the release and a receipt.\nNeeds the 'service' extra; see "
                    "docs/service.md.")
    parser.add_argument("action", nargs="?", choices=("run", "add-analyst", "check"),
                        default="run",
                        help="run the service (default), add-analyst NAME, or check the "
                             "configuration and data without serving")
    parser.add_argument("name", nargs="?", help="the analyst's name (add-analyst)")
    parser.add_argument("--config", help="the service's TOML configuration")
    parser.add_argument("--demo", action="store_true",
                        help="synthetic dataset, temporary ledger, one analyst")
    parser.add_argument("--host", default="127.0.0.1", help="address to listen on")
    parser.add_argument("--port", type=int, default=8000, help="port (0: any free port)")
    parser.add_argument("--workers", type=int, default=1,
                        help="server processes (share the ledger; use PostgreSQL for hosts)")
    parser.add_argument("--ledger", help="override the config's ledger (path or postgresql URL)")
    parser.epilog = ("example:\n  privloss serve --demo\n  privloss serve add-analyst alice "
                     "--config service.toml\n  privloss serve check --config service.toml\n"
                     "  privloss serve --config service.toml --port 8000")
    parser.set_defaults(handler=run)


def _load(path: str):
    try:
        from privloss.service.config import ConfigError, load_config
    except ImportError as error:      # pragma: no cover - extra missing
        raise CommandError(f"the service needs the 'service' extra: pip install "
                           f"'.[service]' from a privloss checkout (the 'service' extra) ({error})") from None
    try:
        return load_config(path)
    except (ConfigError, FileNotFoundError, IsADirectoryError, PermissionError) as error:
        raise CommandError(f"--config: {error}") from None


def _startup_checked(config):
    """Every dataset read and checked (the service's start-up), or CommandError."""
    from privloss.service.app import check_service
    from privloss.service.snapshots import StartupError

    try:
        return check_service(config)
    except StartupError as error:
        raise CommandError(f"--config: {error}") from None


def run(args) -> int:
    if args.action == "add-analyst":
        return _add_analyst(args)
    if args.action == "check":
        return _check(args)
    if args.name is not None:
        raise CommandError(f"unexpected argument {args.name!r} (did you mean add-analyst?)")
    if not 0 <= args.port <= 65535:
        raise CommandError(f"--port must be in [0, 65535], got {args.port}")
    if not 1 <= args.workers <= 64:
        raise CommandError(f"--workers must be in [1, 64], got {args.workers}")
    if args.demo == (args.config is not None):
        raise CommandError("give exactly one of --config FILE and --demo")
    token = None
    if args.demo:
        from privloss.service.demo import make_demo
        config_path, token = make_demo()
    else:
        config_path = args.config
    config = _load(str(config_path))
    if args.ledger is not None:
        import dataclasses
        config = dataclasses.replace(config, ledger=args.ledger)
    try:
        serve(config, host=args.host, port=args.port, workers=args.workers, token=token,
              config_path=str(config_path), ledger_override=args.ledger)
    finally:
        if args.demo:             # the demo's data, ledger and token are temporary
            import shutil
            shutil.rmtree(os.path.dirname(os.path.abspath(config_path)), ignore_errors=True)
    return 0


def _check(args) -> int:
    if args.config is None or args.name is not None:
        raise CommandError("usage: privloss serve check --config FILE")
    config = _load(args.config)
    store = _startup_checked(config)
    for name in config.datasets:
        snapshot = store.current(config.datasets[name])
        print(f"dataset {name!r}: ok (version {snapshot.version or 'live'}, "
              f"{len(snapshot.columns)} column(s))")
    return 0


def _add_analyst(args) -> int:
    if args.name is None or args.config is None:
        raise CommandError("usage: privloss serve add-analyst NAME --config FILE")
    config = _load(args.config)
    if args.name not in config.analysts:
        raise CommandError(f"analyst {args.name!r} is not declared in {args.config} "
                           f"(declared: {', '.join(sorted(config.analysts)) or 'none'}); add an "
                           f"[[analyst]] entry first")
    from privloss.service.auth import add_analyst
    token = add_analyst(config.tokens, args.name)
    print(f"token for analyst {args.name} (shown once; stored only as an argon2id hash in "
          f"{config.tokens}):", file=sys.stderr)
    print(token)
    return 0


def serve(config, *, host: str, port: int, workers: int = 1, token: str | None = None,
          config_path: str | None = None, ledger_override: str | None = None) -> None:
    """Run uvicorn on ``config`` (blocks).  With several workers each process
    builds the app from the config file (:func:`privloss.service.server.app_from_environment`)."""
    import os
    import socket

    import uvicorn

    from privloss.service.app import create_app

    if port == 0:
        with socket.socket() as probe:
            probe.bind((host, 0))
            port = probe.getsockname()[1]
    url = f"http://{host}:{port}/"
    if token is not None:
        print(f"privloss serve --demo: dataset 'engagements' (synthetic), ledger "
              f"{config.ledger}\n  analyst token: {token}\n  dashboard:     {url}\n"
              f"  API:           curl -H 'Authorization: Bearer {token}' {url}v1/datasets",
              flush=True)
    else:
        print(f"privloss serve: {len(config.datasets)} dataset(s), {len(config.analysts)} "
              f"analyst(s); dashboard {url}", flush=True)
    # X-Forwarded-For is read by the service itself, from trusted_proxies only
    # (uvicorn would believe it from 127.0.0.1)
    if workers == 1:
        from privloss.cli.ledger import ledger_errors
        from privloss.service.server import operator_logging
        from privloss.service.snapshots import StartupError
        operator_logging()
        try:
            with ledger_errors():  # a damaged, rolled-back or deleted ledger: exit 2, one line
                app = create_app(config)
        except StartupError as error:
            raise CommandError(f"--config: {error}") from None
        uvicorn.run(app, host=host, port=port, log_level="warning", server_header=False,
                    proxy_headers=False)
        return
    _startup_checked(config)      # before the workers: they reuse its snapshots
    os.environ["PRIVLOSS_SERVICE_CONFIG"] = os.path.abspath(config_path)
    if ledger_override is not None:
        os.environ["PRIVLOSS_SERVICE_LEDGER"] = ledger_override
    uvicorn.run("privloss.service.server:app_from_environment", factory=True, host=host,
                port=port, workers=workers, log_level="warning", server_header=False,
                proxy_headers=False)
