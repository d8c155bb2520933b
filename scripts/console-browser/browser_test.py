"""The review console in a real browser (headless Chromium through Selenium and Debian's chromedriver).

Signs in, moves with `j`, approves with `a`, blocks with `b`, and checks the store and the files through the
sluice CLI; then a reprocess with a provider that disagrees must keep both decisions. Screenshots of the queue,
an item page and the reports page go to the folder given as argv[5]. Chromium runs with background networking
off and every host but loopback unresolvable: nothing leaves the machine.

argv: sluice binary, config path, console URL, data root, screenshot folder, mode file
"""
import json
import os
import subprocess
import sys
import time
import urllib.request

from selenium import webdriver
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.action_chains import ActionChains
from selenium.common.exceptions import JavascriptException, StaleElementReferenceException
from selenium.webdriver.common.by import By
from selenium.webdriver.support import expected_conditions as EC
from selenium.webdriver.support.ui import WebDriverWait

sluice, config, base, data_root, shots, mode_file = sys.argv[1:7]


def status(item_id):
    out = subprocess.run([sluice, "status", item_id, "--json", "--config", config], check=True, capture_output=True, text=True).stdout
    return json.loads(out)


def check(condition, message):
    if not condition:
        raise SystemExit(f"console browser test FAILED: {message}")


options = webdriver.ChromeOptions()
options.binary_location = "/usr/bin/chromium"
for flag in ["--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu", "--window-size=1280,1000",
             "--disable-background-networking", "--disable-component-update", "--disable-sync", "--no-first-run",
             "--disable-default-apps", "--disable-extensions", "--disable-client-side-phishing-detection",
             "--disable-domain-reliability", "--metrics-recording-only", "--no-default-browser-check",
             "--host-resolver-rules=MAP * ~NOTFOUND , EXCLUDE 127.0.0.1"]:
    options.add_argument(flag)
driver = webdriver.Chrome(service=Service("/usr/bin/chromedriver"), options=options)
# Pages reload after every decision: an element read mid-navigation is stale, so waits read the page in one script
# call and retry on staleness.
wait = WebDriverWait(driver, 20, ignored_exceptions=[StaleElementReferenceException, JavascriptException])


def card_ids():
    return driver.execute_script(
        "return Array.from(document.querySelectorAll('article.card[data-item-id]')).map(c => c.getAttribute('data-item-id'));")


try:
    # Signed out: the console sends us to sign in.
    driver.get(base + "/console/")
    wait.until(EC.presence_of_element_located((By.NAME, "username")))
    check("/console/login" in driver.current_url, f"not sent to sign in: {driver.current_url}")
    driver.find_element(By.NAME, "username").send_keys("mod")
    driver.find_element(By.NAME, "password").send_keys("a moderator's passphrase")
    driver.find_element(By.CSS_SELECTOR, "form button[type=submit]").click()
    wait.until(EC.presence_of_element_located((By.CSS_SELECTOR, "article.card[data-item-id]")))
    cards = card_ids()
    check(len(cards) >= 3, f"expected the seeded review items, saw {cards}")
    blurred = driver.execute_script("return getComputedStyle(document.querySelector('img.preview')).filter")
    check("blur" in blurred, f"images must be blurred by default, filter is {blurred!r}")
    driver.save_screenshot(os.path.join(shots, "queue.png"))

    def focused():
        return driver.execute_script("var c = document.querySelector('article.card.focused'); return c && c.getAttribute('data-item-id');")

    wait.until(lambda d: focused() is not None)  # console.js is deferred
    check(focused() == cards[0], f"the first item should be focused, not {focused()}")
    ActionChains(driver).send_keys("j").perform()
    second = focused()
    check(second == cards[1], f"j should move to {cards[1]}, focus is on {second}")
    ActionChains(driver).send_keys("a").perform()
    wait.until(lambda d: second not in card_ids() and focused() is not None)
    third = focused()
    check(third == cards[2], f"after approving, the next item ({cards[2]}) should be focused, not {third}")
    ActionChains(driver).send_keys("b").perform()
    wait.until(lambda d: third not in card_ids())

    approved, blocked = status(second), status(third)
    check(approved["status"] == "approved" and approved["review"]["by"] == "mod", f"{second}: {approved['status']}")
    check(blocked["status"] == "blocked" and blocked["review"]["by"] == "mod", f"{third}: {blocked['status']}")
    user, image = second.split("/")
    check(os.path.exists(os.path.join(data_root, "approved", user, image + ".jpg")), "approved output missing")
    check(os.path.exists(os.path.join(data_root, "thumbnails", user, image + ".jpg")), "thumbnail missing")
    buser, bimage = third.split("/")
    quarantined = os.listdir(os.path.join(data_root, "quarantine", buser)) if os.path.isdir(os.path.join(data_root, "quarantine", buser)) else []
    check(any(name.split(".")[0] == bimage for name in quarantined), f"blocked original not in quarantine: {quarantined}")

    # The item page and the reports page.
    driver.get(base + "/console/items/" + second)
    wait.until(EC.presence_of_element_located((By.CSS_SELECTOR, "table.events")))
    driver.save_screenshot(os.path.join(shots, "item.png"))
    driver.get(base + "/console/reports")
    wait.until(EC.presence_of_element_located((By.CSS_SELECTOR, "section.reports")))
    check(driver.find_elements(By.CSS_SELECTOR, "[data-report-id]"), "the seeded report is not listed")
    driver.save_screenshot(os.path.join(shots, "reports.png"))
finally:
    driver.quit()

# Reprocessing with a provider that disagrees with each person keeps both decisions.
for mode in ["block", "approve"]:
    with open(mode_file, "w") as f:
        f.write(mode)
    subprocess.run([sluice, "reprocess", "--kind", "image", "--json", "--config", config], check=True, capture_output=True)
    check(status(second)["status"] == "approved", f"the person's approval did not stand through a reprocess answering {mode}")
    check(status(third)["status"] == "blocked", f"the person's block did not stand through a reprocess answering {mode}")
print(f"console browser test passed: approved {second}, blocked {third}; screenshots in {shots}")
