"""The dashboard in a real headless Chromium (Selenium): sign in, preview,
release, see the gauges move, screenshot non-blank.  Skipped, with the reason,
where Debian's chromium / chromium-driver or selenium are missing."""

from __future__ import annotations

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
