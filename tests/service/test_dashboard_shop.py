"""The dashboard's SQL form on GROUP BY ROLLUP and on a join with a public
table (issues 20 and 21: "the same in the service and the dashboard"), and
its running-totals form, without a browser (TestClient): previews free,
releases charged once, subtotal rows shown with their intervals, bad input
refused in the page before any charge."""

from __future__ import annotations

import re

import pytest

from tests.service.conftest import cheap_hasher, need_service_extra
from tests.service.test_dashboard import _csrf, _section, _text

need_service_extra()

ROLLUP = {"command": "sql", "epsilon": "1.0", "delta": "1e-6", "max_groups": "1",
          "max_rows_per_group": "2",
          "query": "SELECT country, device, COUNT(*) FROM shop GROUP BY ROLLUP(country, device)"}
JOIN = {"command": "sql", "epsilon": "2.0", "delta": "1e-7", "max_groups": "1",
        "max_rows_per_group": "3", "keys": "EU, AM",
        "query": "SELECT r.region, COUNT(*) FROM shop s JOIN regions r "
                 "ON s.country = r.country GROUP BY r.region"}
RUNNING = {"command": "running", "time_column": "day", "period": "week",
           "start": "2024-01-01", "end": "2024-03-31", "statistic": "count_distinct",
           "max_periods_per_unit": "2", "max_rows_per_period": "1", "epsilon": "0.5"}


def write_shop(directory) -> None:
    """3000 rows of 500 users over 90 days in two countries and two devices
    (and six users on a rare third), a public table of regions, and the service's configuration."""
    import datetime as dt

    import numpy as np
    import pyarrow as pa
    import pyarrow.parquet as pq

    generator = np.random.default_rng(21)
    users = generator.integers(0, 500, size=3000)
    users[:6] = np.arange(1000, 1006)            # six users on a rare device: (other) rows
    days = [dt.date(2024, 1, 1) + dt.timedelta(days=int(d))
            for d in generator.integers(0, 90, size=3000)]
    pq.write_table(pa.table({
        "user_id": users.astype(np.int64), "day": pa.array(days, type=pa.date32()),
        "amount": generator.integers(0, 50, size=3000).astype(np.int64),
        "country": np.array(["DE", "US"])[users % 2],
        "device": np.concatenate([["tv"] * 6, np.array(["mobile", "web"])[(users[6:] // 2) % 2]])
    }), directory / "shop.parquet")
    (directory / "regions.csv").write_text("country,region\nDE,EU\nUS,AM\n", encoding="utf-8")
    (directory / "service.toml").write_text("\n".join([
        "[service]", 'ledger = "budget.sqlite"', "rate = 1000.0", "burst = 1000",
        'public_tables = { regions = "regions.csv" }', "",
        "[[dataset]]", 'name = "shop"', 'path = "shop.parquet"', 'user_column = "user_id"',
        'columns = ["day", "amount", "country", "device"]', "epsilon = 5.0", "delta = 1e-5",
        "", "[[analyst]]", 'name = "alice"', 'datasets = ["shop"]', ""]), encoding="utf-8")


@pytest.fixture()
def shop(tmp_path):
    """(client, csrf, ledger) signed in as alice."""
    from fastapi.testclient import TestClient

    from privloss.service.app import create_app
    from privloss.service.auth import add_analyst
    from privloss.service.config import load_config

    write_shop(tmp_path)
    config = load_config(tmp_path / "service.toml")
    token = add_analyst(config.tokens, "alice", hasher=cheap_hasher())
    app = create_app(config)
    with TestClient(app, raise_server_exceptions=False) as client:
        client.post("/login", data={"token": token, "csrf": _csrf(client.get("/"))})
        yield client, _csrf(client.get("/datasets/shop")), app.state.service.ledger


def _rows(html: str) -> list[list[str]]:
    """The result table's rows (cell texts)."""
    found = re.search(r'(?s)<div class="result" id="result">(.*?)</div>', html)
    assert found, _text(html)[:600]
    return [[_text(cell) for cell in re.findall(r"(?s)<td>(.*?)</td>", row)]
            for row in re.findall(r"(?s)<tr[^>]*>(.*?)</tr>", found.group(1))[1:]]


def test_rollup_through_the_sql_form_shows_subtotals_with_intervals(shop):
    client, csrf, ledger = shop
    preview = client.post("/datasets/shop/preview", data={**ROLLUP, "csrf": csrf})
    assert preview.status_code == 200, _text(preview.text)[:600]
    plan = _text(preview.text)
    assert "noisy count of kept (user, group) pairs passes" in plan and "(all)" in plan
    assert "0.5 + 0.5 = 1" in _section(preview.text, "cost")
    # no accuracy plot of a rollup (its levels' half-widths are listed instead)
    assert 'id="accuracy"' not in preview.text
    assert client.get("/datasets/shop/accuracy.png", params=ROLLUP).status_code == 404
    assert ledger.show("shop")["releases"] == 0                     # a preview is free
    page = client.post("/datasets/shop/release", data={**ROLLUP, "csrf": csrf})
    assert page.status_code == 200, _text(page.text)[:600]
    rows = _rows(page.text)
    # the grand total first, then per country, then per (country, device), then the
    # rows of the subgroups not released on their own
    assert [row[:2] for row in rows][:7] == [["(all)", "(all)"], ["DE", "(all)"],
                                             ["US", "(all)"], ["DE", "mobile"], ["DE", "web"],
                                             ["US", "mobile"], ["US", "web"]]
    assert [row[:2] for row in rows][7:] == [["(other)", "(all)"], ["DE", "(other)"],
                                             ["US", "(other)"]]
    assert "(other): the rows of a released group's subgroups" in _text(page.text)
    for row in rows[:7]:        # a value inside its interval (an (other)'s is cut at 0)
        low, high = map(float, row[3].strip("[]").split(","))
        assert low <= float(row[2]) <= high
    assert ledger.show("shop")["releases"] == 1
    assert "sql by country, device" in _text(client.get("/datasets/shop").text)


def test_rollup_with_public_keys_of_two_columns(shop):
    client, csrf, ledger = shop
    form = {**ROLLUP, "delta": "0", "consistent": "on",
            "keys": "DE|mobile, DE|web, US|mobile, US|web"}
    preview = client.post("/datasets/shop/preview", data={**form, "csrf": csrf})
    assert preview.status_code == 200, _text(preview.text)[:600]
    assert re.search(r"count: within ±[0-9.]+ / [0-9.]+ / [0-9.]+ \(95%",
                     _text(preview.text)), _text(preview.text)
    page = client.post("/datasets/shop/release", data={**form, "csrf": csrf})
    assert page.status_code == 200, _text(page.text)[:600]
    values = {tuple(row[:2]): int(row[2]) for row in _rows(page.text)}
    assert len(values) == 7                         # consistent: subtotals add up
    assert values[("(all)", "(all)")] == values[("DE", "(all)")] + values[("US", "(all)")]
    assert values[("DE", "(all)")] == values[("DE", "mobile")] + values[("DE", "web")]


def test_join_with_a_public_table_through_the_sql_form(shop):
    client, csrf, ledger = shop
    preview = client.post("/datasets/shop/preview", data={**JOIN, "csrf": csrf})
    assert preview.status_code == 200, _text(preview.text)[:600]
    joined = _text(re.search(r'(?s)<li id="join">(.*?)</li>', preview.text).group(1))
    assert "join with public table regions on" in joined and "cost is unchanged" in joined
    assert ledger.show("shop")["releases"] == 0
    page = client.post("/datasets/shop/release", data={**JOIN, "csrf": csrf})
    assert page.status_code == 200, _text(page.text)[:600]
    assert sorted(row[0] for row in _rows(page.text)) == ["AM", "EU"]
    image = re.search(r'id="accuracy" src="([^"]+)"', preview.text).group(1)
    png = client.get(image.replace("&amp;", "&"))        # accuracy_figure of the join's plan
    assert png.status_code == 200 and png.content.startswith(b"\x89PNG")
    assert ledger.show("shop")["releases"] == 1


@pytest.mark.parametrize("change, status, words", [
    ({"bounds": "amount=0:10"}, 422, "bounds does not apply to GROUP BY ROLLUP"),
    ({"query": "SELECT country, SUM(amount) FROM shop GROUP BY ROLLUP(country)"}, 422, "query"),
    ({"delta": "0"}, 422, "delta"),
    ({"query": "SELECT r.region, COUNT(*) FROM shop s JOIN elsewhere r ON s.country = "
               "r.country GROUP BY r.region"}, 422, "not a public table"),
    ({"query": "SELECT user_id, COUNT(*) FROM shop GROUP BY ROLLUP(user_id)"}, 403,
     "not granted"),
])
def test_bad_rollup_and_join_forms_are_refused_before_any_charge(shop, change, status, words):
    client, csrf, ledger = shop
    for action in ("preview", "release"):
        page = client.post(f"/datasets/shop/{action}", data={**ROLLUP, **change, "csrf": csrf})
        assert page.status_code == status, _text(page.text)[:600]
        assert words in _text(re.search(r'(?s)id="error">(.*?)</p>', page.text).group(1))
    assert ledger.show("shop")["releases"] == 0


def test_running_totals_form_previews_then_releases_with_a_chart(shop):
    client, csrf, ledger = shop
    preview = client.post("/datasets/shop/preview", data={**RUNNING, "csrf": csrf})
    assert preview.status_code == 200, _text(preview.text)[:600]
    plan = _text(preview.text)
    assert "13 weeks from 2024-01-01 to 2024-03-25" in plan, plan
    assert "goes from 0 to 0.5 (+0.5)" in _section(preview.text, "cost")
    # the accuracy plan's words (privloss.api.accuracy_plan), from the same plan as the plot
    lines = _text(re.search(r'(?s)id="accuracy-lines">(.*?)</ul>', preview.text).group(1))
    width = re.search(r"at epsilon 0\.5: count-distinct within \+-([0-9.]+) with probability "
                      r"95%", lines)
    assert width, lines                        # the largest half-width, as the plan above says
    assert f"to ±{float(width.group(1)):.4g} (largest)" in plan
    image = re.search(r'id="accuracy" src="([^"]+)"', preview.text).group(1)
    assert client.get(image.replace("&amp;", "&")).status_code == 200
    assert ledger.show("shop")["releases"] == 0
    page = client.post("/datasets/shop/release", data={**RUNNING, "csrf": csrf})
    assert page.status_code == 200, _text(page.text)[:600]
    rows = _rows(page.text)
    assert [row[0] for row in rows][:2] == ["2024-01-01", "2024-01-08"] and len(rows) == 13
    for row in rows:
        low, high = map(float, row[2].strip("[]").split(","))
        assert low <= float(row[1]) <= high
    chart = re.search(r'id="running-chart" src="([^"]+)"', page.text).group(1)
    png = client.get(chart.replace("&amp;", "&"))
    assert png.status_code == 200 and png.content.startswith(b"\x89PNG")
    assert client.get("/datasets/shop/running.png?release=7").status_code == 404
    assert ledger.show("shop")["releases"] == 1
    history = _text(client.get("/datasets/shop").text)
    assert "running totals" in history and "13 period(s)" in history
    again = client.post("/datasets/shop/release", data={**RUNNING, "csrf": csrf})
    assert "(stored answer, free)" in again.text and ledger.show("shop")["releases"] == 1


def test_running_sum_form_sends_its_bounds_and_other_statistics_drop_them(shop):
    client, csrf, ledger = shop
    form = {**RUNNING, "statistic": "count", "sum_column": "amount", "low": "0", "high": "9"}
    assert client.post("/datasets/shop/preview", data={**form, "csrf": csrf}).status_code == 200
    form = {**form, "statistic": "sum", "period": "month", "end": "2024-03-01"}
    page = client.post("/datasets/shop/release", data={**form, "csrf": csrf})
    assert page.status_code == 200, _text(page.text)[:600]
    assert len(_rows(page.text)) == 3


@pytest.mark.parametrize("change, status, words", [
    ({"epsilon": "1e-9"}, 422, "epsilon"), ({"epsilon": "x"}, 422, "epsilon must be a number"),
    ({"delta": "1e-6"}, 422, "delta"), ({"noise": "gaussian"}, 422, "delta"),
    ({"max_periods_per_unit": "0"}, 422, "max_periods_per_unit"),
    ({"max_rows_per_period": "2.5"}, 422, "max_rows_per_period"),
    ({"period": "year"}, 422, "period"), ({"start": "2024-13-01"}, 422, "start"),
    ({"start": ""}, 422, "start"), ({"start": "2024-04-01"}, 422, "end"),
    ({"statistic": "sum"}, 422, "statistic 'sum' needs sum_column, low and high"),
    ({"statistic": "sum", "sum_column": "amount", "low": "5", "high": "1"}, 422, "low"),
    ({"statistic": "sum", "sum_column": "country", "low": "0", "high": "1"}, 422, "numeric"),
    ({"time_column": "user_id"}, 403, "not granted"),
])
def test_bad_running_forms_are_refused_before_any_charge(shop, change, status, words):
    client, csrf, ledger = shop
    for action in ("preview", "release"):
        page = client.post(f"/datasets/shop/{action}", data={**RUNNING, **change, "csrf": csrf})
        assert page.status_code == status, _text(page.text)[:600]
        assert words in _text(re.search(r'(?s)id="error">(.*?)</p>', page.text).group(1))
    assert ledger.show("shop")["releases"] == 0
    for action in ("preview", "release"):                   # and the CSRF token is needed
        assert client.post(f"/datasets/shop/{action}", data=RUNNING).status_code == 403


def _planned_epsilon(html: str, element_id: str) -> float:
    found = re.search(r"planned epsilon ([0-9.e+-]+)", _section(html, element_id))
    assert found, _text(html)[:600]
    return float(found.group(1))


@pytest.mark.parametrize("form, goal, words", [
    ({**JOIN, "query": "SELECT country, COUNT(*), SUM(amount) FROM shop GROUP BY country",
      "bounds": "amount=0:50", "keys": "DE, US"}, {"target_half_width": "400"},
     "a 95% half-width of at most 400"),
    ({**ROLLUP, "delta": "0", "keys": "DE|mobile, DE|web, US|mobile, US|web"},
     {"target_half_width": "400"}, "a 95% half-width of at most 400"),
    (ROLLUP, {"min_release_users": "300"}, "a group of 300 distinct users to be released"),
], ids=["group-by", "rollup-keys", "rollup-min-users"])
def test_sql_form_by_a_goal(shop, form, goal, words):
    client, csrf, ledger = shop
    form = {**form, "epsilon": "", "plan_by": next(iter(goal)), **goal}
    preview = client.post("/datasets/shop/preview", data={**form, "csrf": csrf})
    assert preview.status_code == 200, _text(preview.text)[:600]
    epsilon = _planned_epsilon(preview.text, "goal")
    assert words in _section(preview.text, "goal")
    assert f"for epsilon {epsilon:.6g}" in _text(preview.text)
    image = re.search(r'id="accuracy" src="([^"]+)"', preview.text)
    if image:               # (none for a ROLLUP) the plot of the planned epsilon and split
        png = client.get(image.group(1).replace("&amp;", "&"))
        assert png.status_code == 200 and png.content.startswith(b"\x89PNG")
    assert ledger.show("shop")["releases"] == 0                      # a preview is free
    page = client.post("/datasets/shop/release", data={**form, "csrf": csrf})
    assert page.status_code == 200, _text(page.text)[:600]
    assert _planned_epsilon(page.text, "release-goal") == epsilon
    intervals = [cell for row in _rows(page.text) for cell in row if cell.startswith("[")]
    assert intervals
    for interval in intervals:       # every released half-width meets the target
        low, high = map(float, interval.strip("[]").split(","))
        assert "target_half_width" not in goal or (high - low) / 2 <= 400 * (1 + 1e-6)
    assert ledger.show("shop")["releases"] == 1


def test_running_form_by_target_half_width(shop):
    client, csrf, ledger = shop
    form = {**RUNNING, "epsilon": "", "plan_by": "target_half_width",
            "target_half_width": "60"}
    preview = client.post("/datasets/shop/preview", data={**form, "csrf": csrf})
    assert preview.status_code == 200, _text(preview.text)[:600]
    epsilon = _planned_epsilon(preview.text, "goal")
    found = re.search(r"to ±([0-9.]+) \(largest\)", _text(preview.text))
    assert found and float(found.group(1)) <= 60
    assert f"goes from 0 to {epsilon:.4g}" in _section(preview.text, "cost")
    assert ledger.show("shop")["releases"] == 0
    page = client.post("/datasets/shop/release", data={**form, "csrf": csrf})
    assert page.status_code == 200, _text(page.text)[:600]
    assert _planned_epsilon(page.text, "release-goal") == epsilon
    assert ledger.show("shop")["releases"] == 1
    # no threshold: min_release_users is not a running-totals choice
    bad = client.post("/datasets/shop/preview",
                      data={**form, "plan_by": "min_release_users", "csrf": csrf})
    assert bad.status_code == 422 and "plan_by must be one of epsilon, target_half_width " \
        "for running" in _text(bad.text)
    assert ledger.show("shop")["releases"] == 1
