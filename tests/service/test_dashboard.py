"""The dashboard's forms without a browser (TestClient): top-k, histogram (no
k), DP SQL on the JSON routes' own functions; the preview's cost explained
from the plan's numbers; an empty answer explained; the charts; bad input
refused in the page before any charge, never a 500."""

from __future__ import annotations

import re
from datetime import datetime, timedelta, timezone

import pytest

from tests.service.conftest import issue_tokens, need_service_extra, write_config

need_service_extra()

COUNTRIES = {"US", "IN", "BR", "GB", "DE", "FR", "NG", "JP", "CA", "MX"}


@pytest.fixture()
def signed_in(tmp_path):
    """(client, csrf, ledger) signed in as alice on a fresh service."""
    from fastapi.testclient import TestClient

    from privloss.service.app import create_app
    from privloss.service.config import load_config

    config = load_config(write_config(tmp_path))
    tokens = issue_tokens(config)
    app = create_app(config)
    with TestClient(app, raise_server_exceptions=False) as client:
        page = client.get("/")
        client.post("/login", data={"token": tokens["alice"], "csrf": _csrf(page)})
        yield client, _csrf(client.get("/datasets/views")), app.state.service.ledger


def _csrf(response) -> str:
    found = re.search(r'name="csrf" value="([^"]+)"', response.text)
    assert found, response.text[:500]
    return found.group(1)


def _text(html: str) -> str:
    """The page's visible text (tags dropped, entities of quotes decoded)."""
    import html as entities
    return " ".join(entities.unescape(re.sub(r"<[^>]+>", " ", html)).split())


def _section(html: str, element_id: str) -> str:
    found = re.search(rf'(?s)<div class="[^"]*" id="{element_id}">(.*?)</div>', html)
    assert found, f"no #{element_id} in the page"
    return _text(found.group(1))


TOPK = {"command": "topk", "column": "country", "epsilon": "0.1", "delta": "1e-7", "k": "10",
        "l0": "3", "d_bar": "20"}


def test_topk_preview_explains_why_the_ledger_charges_more_than_epsilon(signed_in):
    client, csrf, ledger = signed_in
    page = client.post("/datasets/views/preview", data={**TOPK, "csrf": csrf})
    assert page.status_code == 200
    # every form field shows text (a dict method's repr once filled the SQL keys)
    assert 'name="keys" id="sql-keys" value=""' in page.text and "built-in" not in page.text
    cost = _section(page.text, "cost")
    # k = 10 at epsilon 0.1: 10 selection steps and 10 counts of 0.0071 each
    # (docs/accounting.md's worked example): pure epsilon 0.142
    assert "0.07098 + 0.07098 = 0.142" in cost
    assert "On its own this release is (0.1, 1e-07)-DP" in cost
    assert "fully adaptive" in cost and "from 0 to" in cost
    found = re.search(r"goes from 0 to ([0-9.]+) \(\+([0-9.]+)\)", cost)
    assert found and float(found.group(1)) == float(found.group(2))
    assert 0.1 < float(found.group(1)) <= 0.1420 + 1e-9
    assert ledger.show("views")["releases"] == 0                      # a preview is free
    lines = _text(re.search(r'(?s)id="accuracy-lines">(.*?)</ul>', page.text).group(1))
    assert "distinct users are almost never released" in lines, lines
    image = re.search(r'id="accuracy" src="([^"]+)"', page.text).group(1)
    png = client.get(image.replace("&amp;", "&"))
    assert png.status_code == 200 and png.headers["content-type"] == "image/png"
    assert png.content.startswith(b"\x89PNG") and len(png.content) > 5000


def test_an_empty_topk_is_explained_by_its_threshold(signed_in):
    client, csrf, ledger = signed_in
    page = client.post("/datasets/views/release", data={**TOPK, "csrf": csrf})
    assert page.status_code == 200 and "Release #1" in page.text
    # 10 countries of about 500 users each: far under the threshold of ~2849
    empty = _section(page.text, "empty")
    assert "Nothing was released" in empty and "h_next + 2849" in empty
    assert "at epsilon 0.2" in empty and "at epsilon 0.4" in empty
    assert ledger.show("views")["releases"] == 1
    assert "(nothing over the threshold)" in _text(client.get("/datasets/views").text)


def test_histogram_sends_no_k_and_releases_every_item_over_the_threshold(signed_in):
    client, csrf, _ = signed_in
    form = {"command": "histogram", "column": "country", "epsilon": "0.3", "delta": "1e-7",
            "l0": "3", "k": "5", "d_bar": "20"}          # k and d_bar are not histogram fields
    preview = client.post("/datasets/views/preview", data={**form, "csrf": csrf})
    assert preview.status_code == 200 and "Preview: histogram" in preview.text
    page = client.post("/datasets/views/release", data={**form, "csrf": csrf})
    assert page.status_code == 200
    released = set(re.findall(r"<tr><td>([A-Z]{2})</td>", page.text))
    assert released == COUNTRIES                           # all 10, not k = 5


def test_sql_form_previews_and_releases_through_the_sql_route(signed_in):
    client, csrf, ledger = signed_in
    form = {"command": "sql", "epsilon": "0.2", "delta": "1e-7",
            "query": "SELECT country, COUNT(*) FROM views GROUP BY country"}
    preview = client.post("/datasets/views/preview", data={**form, "csrf": csrf})
    assert preview.status_code == 200, _text(preview.text)[:400]
    assert "0.1 + 0.1 = 0.2" in _section(preview.text, "cost")
    image = re.search(r'id="accuracy" src="([^"]+)"', preview.text).group(1)
    assert client.get(image.replace("&amp;", "&")).status_code == 200
    page = client.post("/datasets/views/release", data={**form, "csrf": csrf})
    assert page.status_code == 200 and "Release #1" in page.text
    assert set(re.findall(r"<tr><td>([A-Z]{2})</td>", page.text)) == COUNTRIES
    assert ledger.show("views")["releases"] == 1
    dashboard = client.get("/datasets/views")                   # sql rows in the history
    assert dashboard.status_code == 200 and "10 group(s)" in _text(dashboard.text)


@pytest.mark.parametrize("form, status, words", [
    ({"command": "sql", "query": "SELECT industry, COUNT(*) FROM views GROUP BY industry"},
     403, "column 'industry' is not granted"),
    ({"command": "sql", "query": "SELECT country, COUNT(*) FROM secret GROUP BY country"},
     422, "FROM names table 'secret'"),
    ({"command": "sql", "query": "DROP TABLE views"}, 422, "unsupported SQL"),
    ({"command": "sql", "query": "SELECT country, COUNT(*) FROM views GROUP BY country",
      "bounds": "x=1"}, 422, "bounds must be column=low:high"),
    ({"command": "sql", "query": "SELECT country, COUNT(*) FROM views GROUP BY country",
      "max_groups": "0"}, 422, "max_groups"),
    ({"command": "histogram", "column": "country", "epsilon": "abc"}, 422,
     "epsilon must be a number"),
    ({"command": "topk", "column": "user_id"}, 403, "column 'user_id' is not granted"),
    ({"command": "nothing"}, 422, "command must be one of"),
])
def test_bad_forms_are_refused_in_the_page_before_any_charge(signed_in, form, status, words):
    client, csrf, ledger = signed_in
    for action in ("preview", "release"):
        page = client.post(f"/datasets/views/{action}",
                           data={"epsilon": "0.1", "delta": "1e-7", **form, "csrf": csrf})
        assert page.status_code == status, _text(page.text)[:300]
        assert page.headers["content-type"].startswith("text/html")
        assert words in _text(re.search(r'(?s)id="error">(.*?)</p>', page.text).group(1))
    assert ledger.show("views")["releases"] == 0


def test_budget_chart_and_static_script(signed_in):
    client, csrf, _ = signed_in
    client.post("/datasets/views/release", data={**TOPK, "csrf": csrf})
    chart = client.get("/datasets/views/budget.png")
    assert chart.status_code == 200 and chart.content.startswith(b"\x89PNG")
    page = client.get("/datasets/views")
    assert 'id="budget-chart"' in page.text and 'src="/static/dashboard.js"' in page.text
    assert "<script>" not in page.text                  # no inline script (CSP)
    script = client.get("/static/dashboard.js")
    assert script.status_code == 200 and "javascript" in script.headers["content-type"]
    bad = client.get("/datasets/views/accuracy.png?command=topk&column=country&epsilon=x")
    assert bad.status_code == 422
    assert bad.headers["content-type"] == "application/problem+json"


def test_images_need_a_session(tmp_path):
    from fastapi.testclient import TestClient

    from privloss.service.app import create_app
    from privloss.service.config import load_config

    app = create_app(load_config(write_config(tmp_path)))
    with TestClient(app, raise_server_exceptions=False) as client:
        for path in ("budget.png", "tradeoff.png",
                     "accuracy.png?command=topk&column=country&epsilon=0.1"):
            response = client.get(f"/datasets/views/{path}")
            assert response.status_code == 401, path


def test_gaussian_preview_explains_the_zcdp_charge(signed_in):
    client, csrf, _ = signed_in
    form = {"command": "histogram", "column": "country", "epsilon": "0.3", "delta": "1e-7",
            "l0": "3", "noise": "gaussian"}
    cost = _section(client.post("/datasets/views/preview", data={**form, "csrf": csrf}).text,
                    "cost")
    assert "no pure epsilon (Gaussian noise)" in cost and "zCDP rho is" in cost
    assert "'zcdp'" in cost and "infinite" not in cost


SALES = """[service]
ledger = "budget.sqlite"
rate = 1000.0
burst = 1000

[[dataset]]
name = "sales"
path = "sales.parquet"
user_column = "user_id"
columns = ["country", "amount"]
epsilon = 2.0
delta = 1e-6

[[analyst]]
name = "alice"
datasets = ["sales"]
"""


def test_sql_form_with_bounds_keys_and_aggregates(tmp_path):
    """AVG and MEDIAN of a numeric column with bounds and public keys: the
    preview's half-widths per measurement, the release's intervals and the
    median's rank error."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.parquet as pq
    from fastapi.testclient import TestClient

    from privloss.service.app import create_app
    from privloss.service.config import load_config

    generator = np.random.default_rng(7)
    pq.write_table(pa.table({"user_id": generator.integers(0, 3000, 20_000),
                             "country": generator.choice(["US", "IN", "BR"], 20_000),
                             "amount": generator.uniform(0, 100, 20_000)}),
                   tmp_path / "sales.parquet")
    (tmp_path / "service.toml").write_text(SALES, encoding="utf-8")
    config = load_config(tmp_path / "service.toml")
    tokens = issue_tokens(config)
    form = {"command": "sql", "epsilon": "0.5", "delta": "1e-7", "bounds": "amount=0:100",
            "keys": "US, IN, BR", "max_rows_per_group": "3",
            "query": "SELECT country, COUNT(*), AVG(amount), MEDIAN(amount) FROM sales\n"
                     "GROUP BY country"}
    with TestClient(create_app(config), raise_server_exceptions=False) as client:
        client.post("/login", data={"token": tokens["alice"], "csrf": _csrf(client.get("/"))})
        csrf = _csrf(client.get("/datasets/sales"))
        preview = client.post("/datasets/sales/preview", data={**form, "csrf": csrf})
        assert preview.status_code == 200, _text(preview.text)[:400]
        plan = _text(re.search(r'(?s)id="plan">(.*?)<div class="cost"', preview.text).group(1))
        assert "mean(amount) (csum:amount): within" in plan and "rank error" in plan
        image = re.search(r'id="accuracy" src="([^"]+)"', preview.text).group(1)
        assert "bounds=amount%3D0.0%3A100.0" in image and "keys=US%2C+IN%2C+BR" in image
        assert client.get(image.replace("&amp;", "&")).status_code == 200
        page = client.post("/datasets/sales/release", data={**form, "csrf": csrf})
        assert page.status_code == 200
        table = _text(re.search(r'(?s)id="result">(.*?)</table>', page.text).group(1))
        assert set(re.findall(r"\b(US|IN|BR)\b", table)) == {"US", "IN", "BR"}
        assert table.count("rank error") == 3 and "[, ]" not in table


def _goal(html: str, element_id: str) -> tuple[float, str]:
    """(the planned epsilon, the plan's words) of the #goal / #release-goal box."""
    box = _section(html, element_id)
    found = re.search(r"planned epsilon ([0-9.e+-]+)", box)
    assert found, box
    return float(found.group(1)), box


def test_topk_by_target_half_width_previews_free_then_releases_at_the_planned_epsilon(
        signed_in):
    client, csrf, ledger = signed_in
    form = {**TOPK, "epsilon": "", "plan_by": "target_half_width", "target_half_width": "200"}
    preview = client.post("/datasets/views/preview", data={**form, "csrf": csrf})
    assert preview.status_code == 200, _text(preview.text)[:600]
    epsilon, words = _goal(preview.text, "goal")
    assert "a 95% half-width of at most 200" in words and "nothing read or charged" in words
    assert "half-width" in words.split("charged)", 1)[1]             # the plan's own text
    assert 'id="accuracy-lines"' not in preview.text          # said once, in the plan's box
    assert f"for epsilon {epsilon:.6g}" in _text(preview.text)       # the cost explained at it
    assert "this release alone: epsilon" in _text(preview.text)
    image = re.search(r'id="accuracy" src="([^"]+)"', preview.text).group(1)
    assert "target_half_width=200" in image and "epsilon" not in image    # planned again
    png = client.get(image.replace("&amp;", "&"))
    assert png.status_code == 200 and png.content.startswith(b"\x89PNG")
    assert ledger.show("views")["releases"] == 0                      # a preview is free
    # the release button resends the goal (re-planned: the same epsilon)
    hidden = dict(re.findall(r'<input type="hidden" name="([^"]+)" value="([^"]*)">',
                             re.search(r'(?s)id="release-form"(.*?)</form>',
                                       preview.text).group(1)))
    assert hidden["plan_by"] == "target_half_width" and hidden["target_half_width"] == "200"
    page = client.post("/datasets/views/release", data=hidden)
    assert page.status_code == 200 and "Release #1" in page.text, _text(page.text)[:600]
    assert _goal(page.text, "release-goal")[0] == epsilon
    assert ledger.show("views")["releases"] == 1
    assert f"epsilon {epsilon}" in _text(client.get("/datasets/views").text)   # history
    # the same goal again: the stored answer, free
    again = client.post("/datasets/views/release", data=hidden)
    assert "(stored answer, free)" in again.text and ledger.show("views")["releases"] == 1


def test_histogram_by_min_release_users(signed_in):
    client, csrf, ledger = signed_in
    form = {"command": "histogram", "column": "country", "epsilon": "0.3", "delta": "1e-7",
            "l0": "3", "plan_by": "min_release_users", "min_release_users": "400"}
    preview = client.post("/datasets/views/preview", data={**form, "csrf": csrf})
    assert preview.status_code == 200, _text(preview.text)[:600]
    epsilon, words = _goal(preview.text, "goal")
    assert "a group of 400 distinct users to be released" in words
    assert epsilon != 0.3                          # the epsilon field is not read
    assert 'id="histogram-by-users" checked' in preview.text      # the choice is kept
    assert ledger.show("views")["releases"] == 0


@pytest.mark.parametrize("form, words", [
    ({"plan_by": "target_half_width", "target_half_width": ""},
     "target_half_width: a target 95% half-width is required"),
    ({"plan_by": "epsilon", "epsilon": "", "target_half_width": "50"},
     "epsilon: an epsilon is required"),
    ({"target_half_width": "50"}, "target_half_width and epsilon: give exactly one"),
    ({"epsilon": ""}, "epsilon is required (or target_half_width"),
    ({"epsilon": "", "target_half_width": "50", "min_release_users": "9"},
     "min_release_users and target_half_width: give exactly one"),
    ({"plan_by": "min_release_users", "min_release_users": "0"}, "min_release_users"),
    ({"plan_by": "target_half_width", "target_half_width": "-1"}, "target_half_width"),
    ({"plan_by": "target_half_width", "target_half_width": "x"},
     "target_half_width must be a number"),
    ({"plan_by": "delta"}, "plan_by must be one of epsilon, target_half_width"),
])
def test_plan_by_needs_exactly_one_of_epsilon_and_the_goals(signed_in, form, words):
    client, csrf, ledger = signed_in
    for action in ("preview", "release"):
        page = client.post(f"/datasets/views/{action}", data={**TOPK, **form, "csrf": csrf})
        assert page.status_code == 422, _text(page.text)[:300]
        assert words in _text(re.search(r'(?s)id="error">(.*?)</p>', page.text).group(1))
    assert ledger.show("views")["releases"] == 0


def test_epsilon_is_still_the_default_choice(signed_in):
    client, _, _ = signed_in
    page = client.get("/datasets/views").text
    for prefix in ("topk", "histogram", "sql", "running"):
        assert f'id="{prefix}-by-epsilon" checked' in page
        assert f'id="{prefix}-target"' in page
    assert 'id="running-users"' not in page            # running totals have no threshold
    assert 'id="sql-users"' in page and "<script>" not in page


@pytest.mark.parametrize("spacing, pattern", [
    (timedelta(seconds=1), r"^\d\d:\d\d:\d\d$"),      # seconds apart: clock times
    (timedelta(hours=10), r"^(\d\d:\d\d|[A-Z][a-z]{2}-\d\d)$"),
])
def test_budget_chart_time_axis_reads_as_clock_times(spacing, pattern):
    """A few seconds of history got tick labels "36.0, 36.1" (the seconds' digits alone);
    each tick must read as a time of day (or a date) whatever the span."""
    from privloss.service.dashboard_charts import budget_figure

    now = datetime(2026, 11, 28, 20, 21, 40, tzinfo=timezone.utc)
    history = [{"time": (now - spacing * ago).isoformat(), "spent_epsilon_after": spent}
               for ago, spent in ((4, 0.1), (3, 0.3), (1, 0.5))]
    budget = {"dataset": {"spent_epsilon": 0.5, "budget_epsilon": 1.0},
              "mine": {"spent_epsilon": 0.5, "budget_epsilon": 1.0}}
    figure = budget_figure(history, budget, now)
    figure.canvas.draw()
    labels = [label.get_text() for label in figure.axes[0].get_xticklabels()]
    assert len(labels) >= 3 and all(re.match(pattern, label) for label in labels), labels


def test_a_dashboard_release_is_audited_with_its_parameters_and_one_rate_token(signed_in):
    """The page after an action used to sign the analyst in again: that reset
    the action's audit record (parameters and release id lost) and took a second
    token from the analyst's rate."""
    import json

    client, csrf, _ = signed_in
    service = client.app.state.service
    taken = []
    allow = service.limiter.allow
    service.limiter.allow = lambda name: taken.append(name) or allow(name)
    page = client.post("/datasets/views/release", data={**TOPK, "csrf": csrf})
    assert page.status_code == 200 and taken == ["alice"]
    last = json.loads(service.config.audit_log.read_text().splitlines()[-1])
    assert last["path"] == "/datasets/views/release" and last["outcome"] == "released"
    assert last["parameters"]["command"] == "topk" and last["release_id"] is not None
