"""``privloss topk --server URL --token-file F``: the CLI through the service."""

from __future__ import annotations

import json

from privloss.cli.main import main
from tests.service.conftest import ServerProcess, issue_tokens, write_config, need_service_extra

need_service_extra()

FLAGS = ["--privacy-unit", "user_id", "--item-column", "article", "--epsilon", "0.1",
         "--delta", "1e-7", "--k", "5", "--l0", "3", "--d-bar", "20"]


def test_topk_through_the_server(tmp_path, capsys):
    from privloss.service.config import load_config

    path = write_config(tmp_path)
    tokens = issue_tokens(load_config(path))
    token_file = tmp_path / "alice.token"
    token_file.write_text(tokens["alice"] + "\n")
    server = ServerProcess(path).start()
    try:
        remote = ["--server", server.url, "--token-file", str(token_file)]
        assert main(["topk", "views", *remote, *FLAGS, "--dry-run"]) == 0
        assert "fits" in capsys.readouterr().out
        assert main(["topk", "views", *remote, *FLAGS, "--json"]) == 0
        body = json.loads(capsys.readouterr().out)
        assert body["receipt"]["release_id"] == 1 and body["algorithm"] == "unknown-gumbel"
        assert main(["topk", "views", *remote, *FLAGS]) == 0           # stored answer
        assert "stored answer" in capsys.readouterr().out
        huge = [flag if flag != "0.1" else "50" for flag in FLAGS]
        assert main(["topk", "views", *remote, *huge]) == 3
        assert "budget" in capsys.readouterr().err
        assert main(["topk", "secret", *remote, *FLAGS]) == 2
        assert "not granted" in capsys.readouterr().err
        wrong_unit = [flag if flag != "user_id" else "country" for flag in FLAGS]
        assert main(["topk", "views", *remote, *wrong_unit]) == 2
        assert "privacy unit" in capsys.readouterr().err
        assert main(["topk", "views", "--server", server.url, *FLAGS]) == 2
        assert "--token-file" in capsys.readouterr().err
    finally:
        server.stop()
