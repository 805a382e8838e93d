"""The dashboard in a real headless Chromium (Selenium): sign in, preview,
release, see the gauges move, screenshot non-blank.  Skipped, with the reason,
where Debian's chromium / chromium-driver or selenium are missing."""

from __future__ import annotations

import re
import shutil

import pytest

from tests.service.conftest import ServerProcess, issue_tokens, write_config, need_service_extra

need_service_extra()

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
DRIVER = shutil.which("chromedriver")

pytestmark = [
    pytest.mark.skipif(CHROMIUM is None or DRIVER is None,
                       reason="needs Debian's chromium and chromium-driver "
                              "(apt-get install chromium chromium-driver)"),
]


@pytest.fixture()
def browser():
    webdriver = pytest.importorskip("selenium.webdriver")
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for argument in ("--headless", "--no-sandbox", "--disable-gpu",
                     "--disable-background-networking", "--disable-component-update",
                     "--disable-sync", "--no-first-run", "--disable-dev-shm-usage",
                     "--window-size=1280,1000"):
        options.add_argument(argument)
    driver = webdriver.Chrome(options=options, service=Service(executable_path=DRIVER))
    driver.set_page_load_timeout(120)
    driver.implicitly_wait(30)      # find_element waits for the next page
    try:
        yield driver
    finally:
        driver.quit()


def _share(driver, element_id: str) -> float:
    from selenium.webdriver.common.by import By
    return float(driver.find_element(By.ID, element_id).get_attribute("data-share"))


def test_sign_in_preview_release_gauges_screenshot(tmp_path, browser):
    from selenium.webdriver.common.by import By

    from privloss.service.config import load_config

    path = write_config(tmp_path)
    tokens = issue_tokens(load_config(path))
    server = ServerProcess(path).start()
    try:
        browser.get(server.url + "/")
        browser.find_element(By.ID, "token").send_keys("plk_wrong_token")
        browser.find_element(By.ID, "signin").click()
        assert "unknown token" in browser.find_element(By.ID, "error").text
        browser.find_element(By.ID, "token").send_keys(tokens["alice"])
        browser.find_element(By.ID, "signin").click()
        assert browser.find_element(By.ID, "analyst").text == "alice"
        cookie = browser.get_cookie("privloss_session")
        assert cookie["httpOnly"] and cookie["sameSite"] == "Strict"
        assert cookie["value"] != tokens["alice"]                   # a session id, not the token
        browser.find_element(By.ID, "open-views").click()
        assert _share(browser, "budget-mine-epsilon") == 0.0
        browser.find_element(By.ID, "preview").click()
        assert "fits" in browser.find_element(By.ID, "verdict").text
        assert _share(browser, "budget-mine-epsilon") == 0.0      # a preview is free
        browser.find_element(By.ID, "release").click()
        assert "Release #1" in browser.find_element(By.ID, "result").text
        mine = _share(browser, "budget-mine-epsilon")
        assert mine > 0 and _share(browser, "budget-dataset-epsilon") > 0
        rows = browser.find_elements(By.CSS_SELECTOR, "#history tr")
        assert len(rows) == 2                                       # header + one release
        image = browser.find_element(By.ID, "tradeoff")
        assert browser.execute_script("return arguments[0].naturalWidth", image) > 100
        shot = tmp_path / "dashboard.png"
        assert browser.save_screenshot(str(shot))
        import matplotlib.image
        pixels = matplotlib.image.imread(str(shot))
        assert pixels.shape[0] > 500 and pixels.shape[1] > 500
        assert pixels[..., :3].std() > 0.05                      # not blank
        assert len({tuple(row) for row in pixels[::25, ::25, :3].reshape(-1, 3).round(2)}) > 20
        # signing out (a CSRF-protected form) ends the session on the server
        browser.find_element(By.CSS_SELECTOR, "form.logout button").click()
        assert browser.find_element(By.ID, "token")
        browser.add_cookie({"name": "privloss_session", "value": cookie["value"], "path": "/"})
        browser.get(server.url + "/")
        assert browser.find_element(By.ID, "token")
    finally:
        server.stop()


def _click_and_wait(driver, element, timeout: float = 120.0) -> None:
    """Click a submit button and wait for the next page (the old one goes stale)."""
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support import expected_conditions
    from selenium.webdriver.support.ui import WebDriverWait

    page = driver.find_element(By.TAG_NAME, "html")
    element.click()
    WebDriverWait(driver, timeout).until(expected_conditions.staleness_of(page))


def _image_loaded(driver, element_id: str, timeout: float = 120.0) -> int:
    """The natural width of image ``element_id`` once it has loaded."""
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    image = driver.find_element(By.ID, element_id)
    WebDriverWait(driver, timeout).until(
        lambda _: driver.execute_script("return arguments[0].complete", image))
    return driver.execute_script("return arguments[0].naturalWidth", image)


def _shot(driver, tmp_path, name: str, element=None, colours: int = 20):
    """A PNG screenshot (the page, or one element) as an RGB array, checked not
    blank; also copied to $PRIVLOSS_SCREENSHOTS when set (for a person to look at)."""
    import os
    import shutil as files

    import matplotlib.image

    path = tmp_path / f"{name}.png"
    assert (element.screenshot(str(path)) if element is not None
            else driver.save_screenshot(str(path)))
    target = os.environ.get("PRIVLOSS_SCREENSHOTS")
    if target:
        os.makedirs(target, exist_ok=True)
        files.copy(path, os.path.join(target, path.name))
    pixels = matplotlib.image.imread(str(path))[..., :3]
    assert pixels.std() > 0.05, name                                  # not blank
    assert len({tuple(row) for row in pixels[::9, ::9].reshape(-1, 3).round(2)}) > colours, name
    return pixels


def _share_of_colour(pixels, hex_colour: str, tolerance: float = 0.08) -> float:
    colour = [int(hex_colour[i:i + 2], 16) / 255 for i in (1, 3, 5)]
    close = (abs(pixels - colour) <= tolerance).all(axis=-1)
    return float(close.mean())


def test_forms_explanations_progress_and_charts(tmp_path, browser):
    """Top-k (its cost explained, its empty answer explained), the progress
    shown while a release runs, a histogram without k, a DP SQL query, the
    budget chart and the accuracy plot, with screenshots checked."""
    from selenium.webdriver.common.by import By

    from privloss.service.config import load_config

    path = write_config(tmp_path)
    tokens = issue_tokens(load_config(path))
    server = ServerProcess(path).start()
    try:
        browser.get(server.url + "/")
        browser.find_element(By.ID, "token").send_keys(tokens["alice"])
        _click_and_wait(browser, browser.find_element(By.ID, "signin"))
        _click_and_wait(browser, browser.find_element(By.ID, "open-views"))
        assert browser.find_element(By.ID, "form-topk").get_attribute("open") is not None

        # top-k, k = 10 at epsilon 0.1: the preview explains the ledger's charge
        browser.find_element(By.ID, "topk-column").send_keys("country")
        k = browser.find_element(By.ID, "k")
        k.clear()
        k.send_keys("10")
        _click_and_wait(browser, browser.find_element(By.ID, "preview"))
        cost = browser.find_element(By.ID, "cost").text
        assert "0.07098 + 0.07098 = 0.142" in cost and "On its own this release is (0.1" in cost
        assert _image_loaded(browser, "accuracy") > 200
        accuracy = _shot(browser, tmp_path, "accuracy", browser.find_element(By.ID, "accuracy"))
        assert _share_of_colour(accuracy, "#1f77b4") > 0.001     # the half-width curve
        _shot(browser, tmp_path, "preview-topk")

        # progress while the release runs: the submit is held back once to look at it
        form = browser.find_element(By.ID, "release-form")
        browser.execute_script(
            "arguments[0].addEventListener('submit', e => e.preventDefault(), {once: true})",
            form)
        browser.find_element(By.ID, "release").click()
        busy = form.find_element(By.CSS_SELECTOR, ".busy")
        assert busy.is_displayed() and busy.text.startswith("releasing")
        assert browser.find_element(By.ID, "release").get_attribute("disabled") is not None
        browser.execute_script("arguments[0].scrollIntoView({block: 'center'})", busy)
        import time
        time.sleep(1.5)                                 # the seconds counter moves
        assert re.search(r"releasing.*\u2026 [1-9]\d* s", busy.text), busy.text
        _shot(browser, tmp_path, "progress")
        line = _shot(browser, tmp_path, "progress-line", busy, colours=5)
        assert _share_of_colour(line, "#1d3557", 0.15) > 0.02          # the text
        assert _share_of_colour(line, "#e76f51", 0.15) > 0.0005        # the spinner
        page = browser.find_element(By.TAG_NAME, "html")
        browser.execute_script("arguments[0].submit()", form)         # now really release
        from selenium.webdriver.support import expected_conditions
        from selenium.webdriver.support.ui import WebDriverWait
        WebDriverWait(browser, 120).until(expected_conditions.staleness_of(page))
        empty = browser.find_element(By.ID, "empty").text
        assert "Nothing was released" in empty and "h_next +" in empty
        assert "at epsilon 0.2" in empty
        _shot(browser, tmp_path, "empty-topk")

        # histogram: no k field; every country over the threshold
        browser.find_element(By.CSS_SELECTOR, "#form-histogram summary").click()
        histogram = browser.find_element(By.ID, "histogram-form")
        assert not histogram.find_elements(By.NAME, "k")
        browser.find_element(By.ID, "histogram-column").send_keys("country")
        epsilon = browser.find_element(By.ID, "histogram-epsilon")
        epsilon.clear()
        epsilon.send_keys("0.3")
        _click_and_wait(browser, browser.find_element(By.ID, "histogram-preview"))
        assert "fits" in browser.find_element(By.ID, "verdict").text
        _click_and_wait(browser, browser.find_element(By.ID, "release"))
        rows = browser.find_elements(By.CSS_SELECTOR, "#result tr")
        assert len(rows) == 11                                  # header + all 10 countries

        # DP SQL: the query text goes to the /sql route's functions
        browser.find_element(By.CSS_SELECTOR, "#form-sql summary").click()
        query = browser.find_element(By.ID, "sql-query")
        query.clear()
        query.send_keys("SELECT country, COUNT(*) FROM views GROUP BY country")
        epsilon = browser.find_element(By.ID, "sql-epsilon")
        epsilon.clear()
        epsilon.send_keys("0.2")
        _click_and_wait(browser, browser.find_element(By.ID, "sql-preview"))
        assert "0.1 + 0.1 = 0.2" in browser.find_element(By.ID, "cost").text
        _shot(browser, tmp_path, "preview-sql")
        _click_and_wait(browser, browser.find_element(By.ID, "release"))
        assert len(browser.find_elements(By.CSS_SELECTOR, "#result tr")) == 11
        assert len(browser.find_elements(By.CSS_SELECTOR, "#history tr")) == 4

        # budget use over time: three steps up, under the dataset's budget line
        assert _image_loaded(browser, "budget-chart") > 200
        chart = _shot(browser, tmp_path, "budget-chart",
                      browser.find_element(By.ID, "budget-chart"))
        assert _share_of_colour(chart, "#1d3557") > 0.002       # the step line
        assert _share_of_colour(chart, "#e63946") > 0.0005      # the budget line
        pixels = _shot(browser, tmp_path, "dashboard-after-sql")
        assert pixels.shape[0] > 500 and pixels.shape[1] > 1000
    finally:
        server.stop()


def test_rollup_and_running_totals_forms(tmp_path, browser):
    """DP SQL with GROUP BY ROLLUP (subtotal rows shown as "(all)" with their
    intervals) and the running-totals form (preview, release, the chart with
    its band), in the browser, with screenshots checked."""
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import Select

    from privloss.service.auth import add_analyst
    from privloss.service.config import load_config
    from tests.service.conftest import cheap_hasher
    from tests.service.test_dashboard_shop import write_shop

    write_shop(tmp_path)
    token = add_analyst(load_config(tmp_path / "service.toml").tokens, "alice",
                        hasher=cheap_hasher())
    server = ServerProcess(tmp_path / "service.toml").start()
    try:
        browser.get(server.url + "/")
        browser.find_element(By.ID, "token").send_keys(token)
        _click_and_wait(browser, browser.find_element(By.ID, "signin"))
        _click_and_wait(browser, browser.find_element(By.ID, "open-shop"))

        browser.find_element(By.CSS_SELECTOR, "#form-sql summary").click()
        query = browser.find_element(By.ID, "sql-query")
        query.clear()
        query.send_keys("SELECT country, device, COUNT(*) FROM shop "
                        "GROUP BY ROLLUP(country, device)")
        for element_id, value in (("sql-epsilon", "1.0"), ("sql-delta", "1e-6"),
                                  ("sql-max-rows", "2")):
            field = browser.find_element(By.ID, element_id)
            field.clear()
            field.send_keys(value)
        browser.find_element(By.ID, "sql-consistent").click()
        _click_and_wait(browser, browser.find_element(By.ID, "sql-preview"))
        assert "fits" in browser.find_element(By.ID, "verdict").text
        _click_and_wait(browser, browser.find_element(By.ID, "release"))
        rows = browser.find_elements(By.CSS_SELECTOR, "#result tr")
        # header, total, 2 countries, 4 leaves, then the (other) rows of the rare device
        assert len(rows) == 11 and rows[1].text.startswith("(all) (all)")
        assert rows[-1].text.startswith("US (other)")
        result = browser.find_element(By.ID, "result")
        browser.execute_script("arguments[0].scrollIntoView({block: 'center'})", result)
        _shot(browser, tmp_path, "dashboard-rollup")

        browser.find_element(By.CSS_SELECTOR, "#form-running summary").click()
        Select(browser.find_element(By.ID, "running-time")).select_by_visible_text("day")
        browser.find_element(By.ID, "running-start").send_keys("2024-01-01")
        browser.find_element(By.ID, "running-end").send_keys("2024-03-31")
        _click_and_wait(browser, browser.find_element(By.ID, "running-preview"))
        assert "13 weeks from 2024-01-01" in browser.find_element(By.ID, "plan").text
        assert _image_loaded(browser, "accuracy") > 200
        plan = browser.find_element(By.ID, "plan")
        browser.execute_script("arguments[0].scrollIntoView({block: 'start'})", plan)
        _shot(browser, tmp_path, "dashboard-running-preview")
        _click_and_wait(browser, browser.find_element(By.ID, "release"))
        assert len(browser.find_elements(By.CSS_SELECTOR, "#result tr")) == 14
        assert _image_loaded(browser, "running-chart") > 300
        chart = _shot(browser, tmp_path, "running-chart",
                      browser.find_element(By.ID, "running-chart"), colours=5)
        assert _share_of_colour(chart, "#264653", 0.15) > 0.002      # the totals' line
        result = browser.find_element(By.ID, "result")
        browser.execute_script("arguments[0].scrollIntoView({block: 'start'})", result)
        _shot(browser, tmp_path, "dashboard-running")
    finally:
        server.stop()


def test_plan_by_a_target_half_width(tmp_path, browser):
    """Typing a target 95% half-width chooses "plan by: target" (the static
    script), the preview shows the planned epsilon with the plan's words and
    the accuracy plot at it, and the release spends that epsilon."""
    from selenium.webdriver.common.by import By

    from privloss.service.config import load_config

    path = write_config(tmp_path)
    tokens = issue_tokens(load_config(path))
    server = ServerProcess(path).start()
    try:
        browser.set_window_size(1280, 1900)
        browser.get(server.url + "/")
        browser.find_element(By.ID, "token").send_keys(tokens["alice"])
        _click_and_wait(browser, browser.find_element(By.ID, "signin"))
        _click_and_wait(browser, browser.find_element(By.ID, "open-views"))
        browser.find_element(By.ID, "topk-column").send_keys("country")
        assert browser.find_element(By.ID, "topk-by-epsilon").is_selected()
        browser.find_element(By.ID, "topk-target").send_keys("200")
        assert browser.find_element(By.ID, "topk-by-target").is_selected()   # the script
        _click_and_wait(browser, browser.find_element(By.ID, "preview"))
        goal = browser.find_element(By.ID, "goal").text
        found = re.search(r"planned epsilon ([0-9.e+-]+)", goal)
        assert found and "a 95% half-width of at most 200" in goal, goal
        epsilon = float(found.group(1))
        assert f"for epsilon {epsilon:.6g}" in browser.find_element(By.ID, "cost").text
        assert _share(browser, "budget-mine-epsilon") == 0.0            # a preview is free
        assert _image_loaded(browser, "accuracy") > 200
        plan = browser.find_element(By.ID, "plan")
        browser.execute_script("arguments[0].scrollIntoView({block: 'start'})", plan)
        _shot(browser, tmp_path, "dashboard-target", plan)
        _click_and_wait(browser, browser.find_element(By.ID, "release"))
        assert "Release #1" in browser.find_element(By.ID, "result").text
        assert f"planned epsilon {epsilon:.6g}" in browser.find_element(By.ID, "release-goal").text
        assert _share(browser, "budget-mine-epsilon") > 0
    finally:
        server.stop()
