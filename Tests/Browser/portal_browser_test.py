"""The portal in a real browser: selenium drives Debian's chromium against `msi-hub serve` on an ephemeral port,
the test database (MONGODB_URI, a database of this run's own) and the fake FCM (`fake-fcm`).

Covers issue 6's scenarios: an admin builds a channel, an area, an Alert and an Information subject, edits and
deletes one; a communicator sends an Alert and an Information message, sees the confirmation and the sent list,
and sends to a group open to them;
the message is in the database and reached the fake FCM; the message page's reach report follows the receipts two
phones post, without a reload; translation rows are added and removed while the bytes left in the push are
counted; a communicator cannot open admin pages; logging out
ends the session; a name with <script> shows as text; a form without its CSRF token is refused; six wrong
passwords are throttled. Each page is photographed into the screenshots folder.
"""
import argparse
import traceback
import base64
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.parse
import urllib.request
import uuid

from selenium import webdriver
from selenium.common.exceptions import NoAlertPresentException, StaleElementReferenceException, WebDriverException
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import Select, WebDriverWait

ADMIN, ADMIN_PASSWORD = "principal", "principal-pass-1"
COMMUNICATOR, COMMUNICATOR_PASSWORD = "carla", "carla-pass-1"
SCRIPT_NAME = "Drama <script>alert('x')</script>"


class Failure(Exception):
    pass


def check(condition, what):
    if not condition:
        raise Failure(what)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Run:
    """The processes and the browser of one run, and what the steps share."""

    def __init__(self, args):
        self.args = args
        self.work = tempfile.mkdtemp(prefix="msi-portal-browser-")
        self.processes = []
        self.shots = os.path.abspath(args.screenshots)
        shutil.rmtree(self.shots, ignore_errors=True)
        os.makedirs(self.shots)
        base_uri = os.environ["MONGODB_URI"]
        parsed = urllib.parse.urlsplit(base_uri)
        self.database = "msi_browser_" + uuid.uuid4().hex[:8]
        self.mongo_uri = urllib.parse.urlunsplit(parsed._replace(path="/" + self.database))
        self.shared = {}

    # Processes

    def start_fake_fcm(self):
        process = subprocess.Popen([os.path.join(self.args.bin, "fake-fcm"), "--port", "0", "--state-dir",
                                    os.path.join(self.work, "fcm")], stdout=subprocess.PIPE, text=True)
        self.processes.append(process)
        self.fcm = json.loads(process.stdout.readline())

    def start_fake_oidc(self):
        process = subprocess.Popen([os.path.join(self.args.bin, "fake-oidc"), "--port", "0"],
                                   stdout=subprocess.PIPE, text=True)
        self.processes.append(process)
        self.oidc = json.loads(process.stdout.readline())

    def oidc_user(self, email, groups):
        """Who the test provider signs in next."""
        body = json.dumps({"email": email, "groups": groups}).encode()
        request = urllib.request.Request(self.oidc["issuer"] + "/_user", data=body, method="POST",
                                         headers={"Content-Type": "application/json"})
        urllib.request.urlopen(request, timeout=5).read()

    def add_user(self, name, password, role):
        subprocess.run([os.path.join(self.args.bin, "msi-hub"), "user", "add", name, "--role", role,
                        "--mongodb-uri", self.mongo_uri], input=password + "\n", text=True, check=True,
                       stdout=subprocess.DEVNULL)

    def start_hub(self):
        self.port = free_port()
        env = dict(os.environ, MONGODB_URI=self.mongo_uri, GOOGLE_APPLICATION_CREDENTIALS=self.fcm["credentials"],
                   FCM_ENDPOINT=self.fcm["base_url"], FCM_MODE="send", LOG_LEVEL="warning",
                   # Only marked subjects hold messages for approval: the other steps send to a Forced subject.
                   APPROVAL_DEFAULTS="off", SCHOOL_TIME_ZONE="Europe/Berlin",
                   # Staff may also sign in through the test OpenID provider.
                   OIDC_ISSUER=self.oidc["issuer"], OIDC_CLIENT_ID="msi-hub", OIDC_CLIENT_SECRET="test-client-secret",
                   OIDC_DISPLAY_NAME="Test IdP", OIDC_ADMIN_GROUPS="it-admins", OIDC_COMMUNICATOR_GROUPS="staff")
        self.hub_log = open(os.path.join(self.work, "hub.log"), "w")
        process = subprocess.Popen([os.path.join(self.args.bin, "msi-hub"), "serve", "--port", str(self.port)],
                                   env=env, stdout=self.hub_log, stderr=subprocess.STDOUT)
        self.processes.append(process)
        self.base = "http://127.0.0.1:%d" % self.port
        for _ in range(300):
            try:
                if urllib.request.urlopen(self.base + "/healthz", timeout=1).status == 200:
                    return
            except OSError:
                time.sleep(0.1)
        raise Failure("the hub did not answer /healthz")

    def start_browser(self):
        options = webdriver.ChromeOptions()
        options.binary_location = shutil.which("chromium") or "/usr/bin/chromium"
        for argument in ["--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu",
                         "--window-size=1200,1000", "--lang=en-GB"]:
            options.add_argument(argument)
        service = Service(executable_path=shutil.which("chromedriver") or "/usr/bin/chromedriver")
        self.driver = webdriver.Chrome(service=service, options=options)
        self.driver.implicitly_wait(2)

    def stop(self):
        driver = getattr(self, "driver", None)
        if driver:
            driver.quit()
        for process in reversed(self.processes):
            process.terminate()
            try:
                process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                process.kill()
        shutil.rmtree(self.work, ignore_errors=True)

    # Browser helpers

    def open(self, path):
        self.driver.get(self.base + path)
        self.wait_loaded()

    def shot(self, name, width=None):
        driver = self.driver
        if width:
            driver.set_window_size(width, 900)
        height = driver.execute_script("return document.documentElement.scrollHeight")
        size = driver.get_window_size()
        driver.set_window_size(size["width"], max(600, min(height + 140, 3000)))
        driver.save_screenshot(os.path.join(self.shots, name + ".png"))
        driver.set_window_size(1200, 1000)

    def text(self):
        return self.driver.find_element(By.TAG_NAME, "body").text

    def fill(self, field_id, value):
        def fill_once():
            element = self.driver.find_element(By.ID, field_id)
            element.clear()
            element.send_keys(value)
        retrying(fill_once)

    def navigate(self, by, value):
        """Clicks the link or button found by (by, value) and waits until the next page has replaced this one."""
        page = retrying(lambda: self.driver.find_element(By.TAG_NAME, "html"))
        retrying(lambda: self.driver.find_element(by, value).click(), unless=lambda: is_stale(page))
        WebDriverWait(self.driver, 15).until(lambda _: is_stale(page))
        self.wait_loaded()

    def wait_loaded(self):
        WebDriverWait(self.driver, 15).until(
            lambda driver: driver.execute_script("return document.readyState") == "complete")

    def login(self, username, password):
        self.open("/portal/login")
        self.fill("username", username)
        self.fill("password", password)
        self.navigate(By.CSS_SELECTOR, "form button[type=submit]")

    def logout(self):
        self.navigate(By.ID, "logout")

    def click_link(self, text):
        self.navigate(By.LINK_TEXT, text)

    def submit(self, button_id):
        self.navigate(By.ID, button_id)

    def session_cookie(self):
        cookie = self.driver.get_cookie("msi_session")
        return cookie["value"] if cookie else None

    # HTTP helpers (for what a browser does not show: statuses and the API)

    def http(self, method, path, body=None, headers=None):
        request = urllib.request.Request(self.base + path, data=body, method=method, headers=headers or {})
        opener = urllib.request.build_opener(NoRedirect)
        try:
            with opener.open(request, timeout=10) as response:
                return response.status, response.read().decode()
        except urllib.error.HTTPError as error:
            return error.code, error.read().decode()

    def api_get(self, path, user, password):
        token = base64.b64encode(("%s:%s" % (user, password)).encode()).decode()
        status, body = self.http("GET", path, headers={"Authorization": "Basic " + token})
        return status, json.loads(body)


def is_stale(element):
    """Whether `element`'s page has gone (chromedriver says so in one of two ways)."""
    try:
        element.tag_name
        return False
    except StaleElementReferenceException:
        return True
    except WebDriverException as error:
        if "does not belong to the document" in str(error):
            return True
        raise


def retrying(action, unless=lambda: False):
    """Runs `action`, again (up to three times) when chromedriver loses track of a node it just found, a rare
    race of its inspector protocol; not again when `unless()` says the action took effect."""
    for attempt in range(3):
        try:
            return action()
        except WebDriverException as error:
            if "does not belong to the document" not in str(error) or attempt == 2 or unless():
                raise
            time.sleep(0.2)


class NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args, **kwargs):
        return None


# The scenarios, in order; each returns nothing and raises Failure.

def admin_logs_in(run):
    run.open("/")
    check("/portal/login" in run.driver.current_url, "/ leads to the login page")
    run.shot("01-login")
    run.login(ADMIN, ADMIN_PASSWORD)
    check("Hello, " + ADMIN in run.text(), "the admin sees the menu")
    run.shot("02-menu-admin")


def admin_builds_channel_area_and_subjects(run):
    run.click_link("Channels")
    run.submit("add")
    run.shot("03-admin-channel-form")
    run.fill("name", "   ")  # blank (the browser's own check lets spaces pass): the error shows beside the name
    run.fill("desc", "kept as typed")
    run.submit("save")
    check(run.driver.find_element(By.ID, "name-error").text == "Enter a name.", "a missing name is shown beside the field")
    check(run.driver.find_element(By.ID, "desc").get_attribute("value") == "kept as typed", "the form is kept")
    run.fill("name", "Riverside High")
    run.fill("desc", "Announcements of Riverside High School")
    run.submit("save")
    check("The channel was added." in run.text(), "the channel was added")
    summary = run.driver.find_element(By.XPATH, "//summary[.//span[text()='Riverside High']]")
    summary.click()
    run.navigate(By.LINK_TEXT, "Areas of Riverside High")
    run.submit("add")
    run.fill("name", "Year 10")
    run.fill("desc", "Pupils of year 10 and their parents")
    run.submit("save")
    check("The area was added." in run.text(), "the area was added")
    run.driver.find_element(By.XPATH, "//summary[.//span[text()='Year 10']]").click()
    run.navigate(By.LINK_TEXT, "Subjects of Year 10")
    run.shared["subjects_url"] = run.driver.current_url
    for name, desc, distribution, level, access in [
        ("Exam alerts", "Changes to exams, at once", "Alert", "Forced", ""),
        ("Newsletter", "The weekly newsletter", "Information", "Recommended", ""),
        ("Staff only", "Not for communicators", "Information", "", "someone-else"),
        ("Trips", "School trips", "Information", "", ""),
    ]:
        run.submit("add")
        run.fill("name", name)
        run.fill("desc", desc)
        run.driver.find_element(By.ID, "distribution-" + distribution).click()
        Select(run.driver.find_element(By.ID, "level")).select_by_value(level)
        run.fill("access", access)
        if name == "Exam alerts":
            run.shot("04-admin-subject-form")
        run.submit("save")
        check("The subject was added." in run.text(), "the subject %s was added" % name)


def admin_edits_and_deletes_a_subject(run):
    run.driver.find_element(By.XPATH, "//summary[.//span[text()='Trips']]").click()
    run.navigate(By.XPATH, "//details[.//span[text()='Trips']]//a[text()='Edit']")
    run.fill("name", "School trips")
    run.driver.find_element(By.ID, "distribution-Alert").click()
    run.submit("save")
    check("The subject was saved." in run.text(), "the subject was saved")
    run.driver.find_element(By.XPATH, "//summary[.//span[text()='School trips']]").click()
    check("Alert" in run.driver.find_element(By.XPATH, "//details[.//span[text()='School trips']]").text,
          "the edit changed the distribution")
    run.navigate(By.XPATH, "//details[.//span[text()='School trips']]//a[text()='Delete']")
    check("Delete the subject “School trips”?" in run.text(), "a delete asks first")
    run.shot("05-admin-confirm-delete")
    run.submit("confirm-delete")
    check("The subject was deleted." in run.text(), "the subject was deleted")
    check("School trips" not in run.text(), "the deleted subject is gone")
    for summary in run.driver.find_elements(By.CSS_SELECTOR, "#items summary")[:2]:
        summary.click()
    run.shot("06-admin-subjects", width=880)


def a_script_name_shows_as_text(run):
    run.open("/portal/admin/channels/new")
    run.fill("name", SCRIPT_NAME)
    run.submit("save")
    check(SCRIPT_NAME in run.text(), "the name shows as text")
    try:
        run.driver.switch_to.alert
        raise Failure("a script in a name ran")
    except NoAlertPresentException:
        pass
    check(run.driver.execute_script("return document.querySelectorAll('main script').length") == 0,
          "no script element came from the name")
    run.shot("07-admin-channels")


def admin_manages_users_and_tokens(run):
    run.click_link("Users")
    run.fill("username", "dora")
    run.navigate(By.XPATH, "//form[@id='add-user']//button")
    check("dora can now log in" in run.text(), "a new user gets a password, shown once")
    run.shot("08-admin-user-added")
    run.click_link("Back to the users")
    run.driver.find_element(By.XPATH, "//summary[.//span[text()='dora']]").click()
    retrying(lambda: Select(run.driver.find_element(By.ID, "role-dora")).select_by_value("admin"))
    run.navigate(By.XPATH, "//details[.//span[text()='dora']]//button[text()='Change role']")
    check("The role was changed." in run.text(), "the role was changed")
    run.driver.find_element(By.XPATH, "//summary[.//span[text()='dora']]").click()
    run.navigate(By.XPATH, "//details[.//span[text()='dora']]//button[text()='Reset password']")
    check("New password for dora" in run.text(), "a reset password is shown once")
    run.click_link("Back to the users")
    run.driver.find_element(By.XPATH, "//summary[.//span[text()='dora']]").click()
    check("admin" in run.driver.find_element(By.XPATH, "//summary[.//span[text()='dora']]").text, "dora is an admin")
    run.navigate(By.XPATH, "//details[.//span[text()='dora']]//button[text()='Disable']")
    check("The user was disabled and logged out." in run.text(), "the user was disabled")
    run.driver.find_element(By.XPATH, "//summary[.//span[text()='dora']]").click()
    run.shot("09-admin-users")
    run.click_link("API tokens")
    run.fill("name", "timetable-bot")
    run.navigate(By.XPATH, "//form[@id='add-token']//button")
    secret = run.driver.find_element(By.ID, "secret").get_attribute("value")
    check(secret.startswith("msi_"), "the token's secret is shown once")
    run.click_link("Back to the tokens")
    check(secret not in run.driver.page_source, "the secret is not shown again")
    status, _ = run.http("GET", "/channel", headers={"Authorization": "Bearer " + secret})
    check(status == 200, "the new token works")
    run.driver.find_element(By.XPATH, "//summary[.//span[text()='timetable-bot']]").click()
    run.navigate(By.XPATH, "//details[.//span[text()='timetable-bot']]//button")
    check("The token was revoked." in run.text(), "the token was revoked")
    status, _ = run.http("POST", "/channel", b"{}", {"Authorization": "Bearer " + secret,
                                                     "Content-Type": "application/json"})
    check(status == 401, "a revoked token stops working (got %d)" % status)
    run.shot("10-admin-tokens")


def admin_imports_a_group_roster(run):
    run.click_link("Users")
    check("May message persons directly" in run.text(), "users can be given the right to message persons")
    run.click_link("Groups")
    check("No groups yet." in run.text(), "no groups at first")
    run.fill("id", "class-7b")
    run.fill("name", "Class 7B")
    roster = os.path.join(run.work, "class-7b.csv")
    with open(roster, "w") as file:
        file.write("person\r\nalice@school.example\r\n\r\nbob\r\n")
    run.driver.find_element(By.ID, "roster").send_keys(roster)
    run.navigate(By.XPATH, "//form[@id='import-group']//button")
    check("The roster was imported." in run.text(), "the roster was imported")
    check(run.driver.find_element(By.ID, "member-count").text == "2", "the header line and blank line are skipped")
    check("alice@school.example" in run.text() and "bob" in run.text(), "the group's page lists its members")
    run.shot("10b-admin-group")
    run.click_link("Groups")
    check("2 members" in run.text(), "the list shows the member count")


def logout_ends_the_session(run):
    cookie = run.session_cookie()
    check(cookie, "a session cookie is set")
    run.logout()
    check("You have logged out." in run.text(), "logging out says so")
    run.open("/portal/send")
    check("/portal/login" in run.driver.current_url, "after logout the portal asks to log in")
    # The old cookie, replayed, opens nothing: the session ended on the server.
    status, _ = run.http("GET", "/portal/send", headers={"Cookie": "msi_session=" + cookie})
    check(status == 303, "a logged-out session's cookie is refused (got %d)" % status)


def communicator_cannot_open_admin_pages(run):
    run.login(COMMUNICATOR, COMMUNICATOR_PASSWORD)
    check("Hello, " + COMMUNICATOR in run.text(), "the communicator sees the menu")
    check("Channels" not in run.driver.find_element(By.CSS_SELECTOR, "nav.menu").text, "no admin links")
    run.shot("11-menu-communicator")
    for path in ["/portal/admin/channels", "/portal/admin/users", "/portal/admin/tokens", "/portal/admin/groups"]:
        run.open(path)
        check("Admins only" in run.text(), "a communicator is refused " + path)
    run.shot("12-admins-only")


def choose(run, channel, area, subject):
    for field, text in [("channel", channel), ("area", area), ("subject", subject)]:
        retrying(lambda: Select(run.driver.find_element(By.ID, field)).select_by_visible_text(text))


def communicator_sends_an_alert_and_an_information(run):
    run.open("/portal")
    run.click_link("Send a message")
    choose(run, "Riverside High", "Year 10", "Exam alerts")
    subjects = [o.text for o in Select(run.driver.find_element(By.ID, "subject")).options]
    check("Staff only" not in subjects, "a subject whose access list leaves the communicator out is not offered")
    check(run.driver.find_element(By.ID, "info-distribution").text == "Alert", "the distribution is shown")
    check("Forced" in run.driver.find_element(By.ID, "info-level").text, "the level is shown")
    check(run.driver.find_element(By.ID, "desc").is_displayed(), "an Alert asks for the notification text")
    run.fill("title", "Maths exam moved")
    run.fill("message", "The maths exam moves from Monday to Tuesday, 9:00, in the main hall.")
    run.submit("send")  # no notification text: the error shows beside it, the form is kept
    check("Enter the notification text." in run.text(), "the missing notification text is shown beside the field")
    check(run.driver.find_element(By.ID, "title").get_attribute("value") == "Maths exam moved", "the form is kept")
    run.shot("13-send-form-error")
    run.click_link("Send a message")  # a fresh form, filled in full
    choose(run, "Riverside High", "Year 10", "Exam alerts")
    run.fill("title", "Maths exam moved")
    run.fill("desc", "Maths exam: Tuesday 9:00, main hall")
    run.fill("message", "The maths exam moves from Monday to Tuesday, 9:00, in the main hall.")
    check(run.driver.find_element(By.ID, "desc-count").text.startswith("35 of 500"), "a counter counts")
    run.shot("13-send-form", width=880)
    run.shot("13-send-form-phone", width=390)
    run.submit("send")
    check("Your message was sent" in run.text(), "the confirmation page")
    alert_key = run.driver.find_element(By.ID, "msi-key").text
    check(len(alert_key) == 24, "the confirmation shows the msi_key")
    run.shared["alert_key"] = alert_key
    run.shot("14-confirmation")
    run.navigate(By.ID, "send-again")
    choose(run, "Riverside High", "Year 10", "Newsletter")
    check(not run.driver.find_element(By.ID, "desc").is_displayed(), "an Information message has no notification text")
    run.fill("title", "Newsletter, week 48")
    run.fill("message", "Sports day photos, the new library hours and the winter concert.")
    run.submit("send")
    run.shared["information_key"] = run.driver.find_element(By.ID, "msi-key").text
    run.click_link("Sent messages")
    for _ in range(60):  # the relay reaches the fake FCM within moments
        if run.text().count("Sent to the push service") >= 2:
            break
        time.sleep(0.25)
        run.driver.refresh()
    text = run.text()
    check(text.index("Newsletter, week 48") < text.index("Maths exam moved"), "the sent list is newest first")
    check(text.count("Sent to the push service") == 2, "both messages show as delivered")
    run.shot("15-sent")
    Select(run.driver.find_element(By.ID, "channel")).select_by_visible_text("Riverside High")
    Select(run.driver.find_element(By.ID, "area")).select_by_visible_text("Year 10")
    Select(run.driver.find_element(By.ID, "subject")).select_by_visible_text("Exam alerts")
    run.navigate(By.XPATH, "//form[@id='filter-form']//button")
    check("Maths exam moved" in run.text() and "Newsletter, week 48" not in run.text(), "the filter by subject")


def the_messages_are_stored_and_reached_the_fake_fcm(run):
    for key, title, distribution in [(run.shared["alert_key"], "Maths exam moved", "Alert"),
                                     (run.shared["information_key"], "Newsletter, week 48", "Information")]:
        status, message = run.api_get("/message/" + key, COMMUNICATOR, COMMUNICATOR_PASSWORD)
        check(status == 200, "the message is in the database")
        check(message["title"] == title and message["distribution"] == distribution
              and message["sender"] == COMMUNICATOR, "stored as sent")
        check(message["relay"]["state"] == "sent", "relayed")
    received = json.loads(urllib.request.urlopen(run.fcm["base_url"] + "/_received", timeout=5).read())
    keys = [body["message"]["data"].get("msi_key") for body in received]
    check(keys.count(run.shared["alert_key"]) == 2, "the Alert reached FCM as a notification and as data")
    check(keys.count(run.shared["information_key"]) == 1, "the Information reached FCM as data")
    notification = [b["message"] for b in received if "notification" in b["message"]]
    check(notification and notification[0]["notification"]["body"] == "Maths exam: Tuesday 9:00, main hall",
          "the notification's body is the desc")


def the_reach_report_updates_live(run):
    """Two phones registered (the Forced subject "Exam alerts" subscribes them), an Alert sent to it from the form:
    the message page's reach report follows the receipts the phones post, without a reload."""
    phones = []
    for index in range(2):
        body = json.dumps({"registration": "browser-reach-%d" % index, "platform": "android"}).encode()
        status, answer = run.http("POST", "/device", body, {"Content-Type": "application/json"})
        check(status == 201, "a phone registers (%d: %s)" % (status, answer[:200]))
        registered = json.loads(answer)
        phones.append((registered["device_id"], registered["device_secret"]))
    run.open("/portal/send")
    choose(run, "Riverside High", "Year 10", "Exam alerts")
    run.fill("title", "Are you in the exam hall?")
    run.fill("desc", "Exam: answer when seated")
    run.fill("message", "Please acknowledge once you are seated in the main hall.")
    run.submit("send")
    key = run.driver.find_element(By.ID, "msi-key").text
    check(run.driver.find_element(By.ID, "reach").get_attribute("data-live") == "true", "the report's script runs")

    def shown(element_id):
        return run.driver.find_element(By.ID, element_id).text

    def silent():
        return [cell.text for cell in run.driver.find_elements(By.CSS_SELECTOR, "#reach-silent tr td:first-child")]

    WebDriverWait(run.driver, 20).until(lambda _: shown("reach-audience") == "2" and len(silent()) == 2)
    check(shown("reach-acknowledged") == "0", "nobody has acknowledged yet")
    run.driver.execute_script("window.reachPageMark = 'the same page';")
    (first, first_secret), (second, _) = phones
    receipts = json.dumps([{"msi_key": key, "event": "received", "at": int(time.time() * 1000)},
                           {"msi_key": key, "event": "acknowledged", "at": int(time.time() * 1000)}]).encode()
    status, answer = run.http("POST", "/device/%s/receipts" % first, receipts,
                              {"Content-Type": "application/json", "Authorization": "Bearer " + first_secret})
    check(status == 200 and '"stored"' in answer, "the phone's receipts are stored (%d: %s)" % (status, answer[:200]))
    WebDriverWait(run.driver, 15).until(lambda _: shown("reach-acknowledged") == "1")
    check(shown("reach-received") == "1" and shown("reach-not_answered") == "1", "the counts follow the receipts")
    check(silent() == [second], "only the phone that has not answered is listed")
    check(run.driver.execute_script("return window.reachPageMark") == "the same page", "the page was not reloaded")
    run.shot("16-reach-report")


def communicator_adds_and_removes_translations(run):
    """The send form's translation rows: added and removed with buttons, the bytes left in the push counted live (a
    warning past the limit), the expiry sent with the browser's offset; the message is stored with its translation
    and relayed in that language too."""
    run.open("/portal/send")
    choose(run, "Riverside High", "Year 10", "Exam alerts")
    run.fill("title", "School closed tomorrow")
    run.fill("desc", "Closed tomorrow: snow")
    run.fill("message", "The school is closed tomorrow because of the snow.")
    count = run.driver.find_element(By.ID, "payload-count")

    def left():
        return int(count.get_attribute("data-left"))

    def rows():
        return run.driver.find_elements(By.CSS_SELECTOR, "#translation-rows .translation-row")

    start = left()
    check(0 < start < 2048 and count.text == "%d bytes left in the push" % start, "the bytes left are shown")
    check(len(rows()) == 1, "one translation row to begin with")
    title_hi = "कल स्कूल बंद"
    rows()[0].find_element(By.NAME, "tr_lang").send_keys("hi")
    rows()[0].find_element(By.NAME, "tr_title").send_keys(title_hi)
    rows()[0].find_element(By.NAME, "tr_desc").send_keys("कल बर्फ़ के कारण स्कूल बंद")
    one = left()
    check(one < start - len(title_hi.encode()), "the translation's UTF-8 bytes are counted (%d, then %d)" % (start, one))
    run.driver.find_element(By.ID, "add-translation").click()
    check(len(rows()) == 2, "a second row is added")
    second = rows()[1]
    check(second.find_element(By.NAME, "tr_lang").get_attribute("value") == "", "the new row is empty")
    second.find_element(By.NAME, "tr_lang").send_keys("ta")
    second.find_element(By.NAME, "tr_title").send_keys("நாளை பள்ளி மூடல்")
    second.find_element(By.NAME, "tr_desc").send_keys("பனி காரணமாக நாளை மூடல்")
    two = left()
    check(two < one, "the second translation is counted (%d, then %d)" % (one, two))
    second.find_element(By.NAME, "tr_message").send_keys("பனி " * 200)
    check(left() < 0 and "over" in count.get_attribute("class") and "cut" in count.text,
          "past the limit the count warns that the text will be cut (%s)" % count.text)
    run.shot("16b-send-form-over", width=880)
    second.find_element(By.CSS_SELECTOR, "[data-remove-row]").click()
    check(len(rows()) == 1 and left() == one, "removing the row gives its bytes back (%d, %d)" % (left(), one))
    check("over" not in count.get_attribute("class"), "the warning goes with it")
    # The expiry, typed in the browser's time zone, is sent with its offset.
    run.driver.execute_script(
        "var f = document.getElementById('expires-local'); f.value = arguments[0];"
        "f.dispatchEvent(new Event('input', {bubbles: true}));",
        time.strftime("%Y-%m-%dT%H:%M", time.localtime(time.time() + 3 * 86400)))
    sent_expiry = run.driver.find_element(By.ID, "expires-at").get_attribute("value")
    check(len(sent_expiry) == 25 and sent_expiry[19] in "+-", "the expiry carries the browser's offset: " + sent_expiry)
    expiry_ms = run.driver.execute_script(
        "return new Date(document.getElementById('expires-local').value).getTime();")
    run.shot("16b-send-form-translations", width=880)
    run.submit("send")
    check("Your message was sent" in run.text(), "the translated message is sent")
    check(run.driver.find_element(By.ID, "sent-languages").text == "en (the texts above), hi",
          "the message page lists its languages")
    key = run.driver.find_element(By.ID, "msi-key").text
    status, message = run.api_get("/message/" + key, COMMUNICATOR, COMMUNICATOR_PASSWORD)
    check(status == 200 and list(message["translations"]) == ["hi"]
          and message["translations"]["hi"]["title"] == title_hi, "stored with its one translation")
    check(message["expires_at"] == expiry_ms, "the expiry is the time typed, in the browser's zone")
    for _ in range(60):
        received = json.loads(urllib.request.urlopen(run.fcm["base_url"] + "/_received", timeout=5).read())
        hindi = [b["message"] for b in received if b["message"].get("data", {}).get("msi_key") == key
                 and " && 'lang-hi' in topics" in b["message"].get("condition", "")]
        if hindi:
            break
        time.sleep(0.25)
    check(hindi and hindi[0]["notification"]["title"] == title_hi, "FCM got the Hindi request for lang-hi")
    run.shot("16c-confirmation-translations")


def a_form_without_its_csrf_token_is_refused(run):
    run.click_link("Send a message")
    choose(run, "Riverside High", "Year 10", "Newsletter")
    run.fill("title", "Forged")
    run.fill("message", "This form lost its token.")
    run.driver.execute_script("document.querySelector('#send-form input[name=_csrf]').remove()")
    run.submit("send")
    check("This form cannot be accepted" in run.text(), "the form without its token is refused")
    run.shot("16-csrf-refused")
    cookie = run.session_cookie()
    body = urllib.parse.urlencode({"title": "Forged", "message": "x"}).encode()
    status, _ = run.http("POST", "/portal/send", body, {"Cookie": "msi_session=" + cookie,
                                                        "Content-Type": "application/x-www-form-urlencoded"})
    check(status == 403, "a POST without the token is answered 403 (got %d)" % status)
    status, sent = run.api_get("/message?limit=10", ADMIN, ADMIN_PASSWORD)
    check(all(m["title"] != "Forged" for m in sent["messages"]), "nothing was stored")
    run.open("/portal")
    run.logout()


def communicator_sends_to_a_group(run):
    token = base64.b64encode(("%s:%s" % (ADMIN, ADMIN_PASSWORD)).encode()).decode()
    body = json.dumps({"name": "Class 10A", "members": ["pupil-1", "pupil-2", "pupil-3"],
                       "access": [COMMUNICATOR]}).encode()
    status, _ = run.http("PUT", "/group/class-10a", body, {"Authorization": "Basic " + token,
                                                           "Content-Type": "application/json"})
    check(status in (200, 201), "the admin keeps a group open to the communicator (got %d)" % status)
    run.login(COMMUNICATOR, COMMUNICATOR_PASSWORD)
    run.click_link("Send a message")
    check(run.driver.find_element(By.ID, "channel").is_displayed(), "a subject is the first choice")
    check(not run.driver.find_element(By.ID, "group").is_displayed(), "the group's field shows once chosen")
    run.driver.find_element(By.ID, "to-group").click()
    check(not run.driver.find_element(By.ID, "channel").is_displayed(), "a group hides the subject's fields")
    group = Select(run.driver.find_element(By.ID, "group"))
    check(group.first_selected_option.text.startswith("Class 10A · 3 members · 0 registered devices"),
          "the only group is chosen, with its members and their devices")
    run.driver.find_element(By.ID, "distribution-Information").click()
    check(not run.driver.find_element(By.ID, "desc").is_displayed(), "an Information has no notification text")
    run.driver.find_element(By.ID, "distribution-Alert").click()
    check(run.driver.find_element(By.ID, "desc").is_displayed(), "an Alert asks for the notification text")
    run.fill("title", "Class photo")
    run.fill("desc", "Class photo tomorrow at 10:00")
    run.fill("message", "Class 10A meets in the gym at 10:00 for the class photo.")
    run.shot("18-send-form-group", width=880)
    run.submit("send")
    check(run.driver.find_element(By.ID, "sent-to").text == "To group Class 10A", "the confirmation names the group")
    key = run.driver.find_element(By.ID, "msi-key").text
    run.shot("19-confirmation-group")
    status, message = run.api_get("/message/" + key, COMMUNICATOR, COMMUNICATOR_PASSWORD)
    check(status == 200 and message["to"]["groups"] == ["class-10a"] and "topic_key" not in message,
          "stored to the group, without a topic")
    run.click_link("Sent messages")
    check("To group Class 10A" in run.text(), "the sent list names the group")
    run.logout()


def set_value(run, field_id, value):
    """Sets a date or time field's value as a person picking it would (its typed form depends on the locale)."""
    element = run.driver.find_element(By.ID, field_id)
    run.driver.execute_script(
        "arguments[0].value = arguments[1]; arguments[0].dispatchEvent(new Event('change'))", element, value)


def berlin_local(days, hour):
    """The `datetime-local` value of `hour`:00 `days` from today on Berlin's wall clock."""
    from zoneinfo import ZoneInfo
    from datetime import datetime, timedelta
    day = datetime.now(ZoneInfo("Europe/Berlin")).date() + timedelta(days=days)
    return "%sT%02d:00" % (day.isoformat(), hour)


def communicator_schedules_a_message_and_an_event(run):
    run.login(COMMUNICATOR, COMMUNICATOR_PASSWORD)
    # A message sent later: "send at" on the school's wall clock.
    run.click_link("Send a message")
    check("the school's time, Europe/Berlin" in run.text(), "the form names the school's zone")
    choose(run, "Riverside High", "Year 10", "Newsletter")
    run.fill("title", "Concert tickets")
    run.fill("message", "Tickets for the winter concert are on sale from tomorrow.")
    later = berlin_local(2, 8)
    set_value(run, "send-at", later)
    run.submit("send")
    check("Scheduled for" in run.text() and later.replace("T", " ") + " (Europe/Berlin)" in run.text(),
          "the message's page shows when it goes, in the school's zone")
    run.shot("24-scheduled-message")
    # An event with reminders, repeating weekly, for the class group.
    run.open("/portal")
    run.click_link("Events and reminders")
    check(run.driver.find_element(By.ID, "no-occurrences").is_displayed(), "no event yet")
    run.navigate(By.ID, "new-event")
    check(run.driver.find_element(By.ID, "tz").get_attribute("value") == "Europe/Berlin", "the school's zone")
    run.driver.find_element(By.ID, "to-group").click()
    retrying(lambda: Select(run.driver.find_element(By.ID, "group")).select_by_visible_text("Class 10A"))
    run.fill("title", "Chess club")
    run.fill("message", "Bring your boards.")
    run.fill("location", "Room 12")
    start = berlin_local(3, 18)
    set_value(run, "starts-at", start)
    Select(run.driver.find_element(By.ID, "repeat")).select_by_value("WEEKLY")
    run.driver.find_element(By.ID, "lead-P1D").click()
    run.shot("25-event-form", width=880)
    run.submit("save-event")
    check("The event is saved" in run.text(), "the event's page says it is saved")
    check("%s 18:00 (Europe/Berlin)" % start[:10] in run.text(), "the first occurrence on the Berlin wall clock")
    check(run.driver.find_element(By.ID, "event-reminders").text == "1 day before, 30 minutes before",
          "the reminders in words")
    event_id = run.driver.current_url.split("/portal/events/")[1].split("?")[0]
    run.shared["event_id"] = event_id
    run.shot("26-event")
    run.navigate(By.ID, "cancel-" + start[:10])
    check("The occurrence is cancelled" in run.text(), "one occurrence cancelled")
    check(run.driver.find_element(By.ID, "event-cancelled").text == start[:10], "shown as cancelled")
    status, event = run.api_get("/event/" + event_id, COMMUNICATOR, COMMUNICATOR_PASSWORD)
    check(status == 200 and event["exdates"] == [start[:10]] and event["recurrence"] == "FREQ=WEEKLY"
          and event["to"]["groups"] == ["class-10a"] and event["reminders"] == ["P1D", "PT30M"],
          "the API has the event as the portal made it (got %s)" % event)
    run.click_link("Events and reminders")
    check("Chess club" in run.text(), "the list shows its next occurrences")
    run.shot("27-events")
    # A communicator without the right to message persons: the rota's nights are refused beside them.
    run.open("/portal/events/%s/rota" % event_id)
    night = berlin_local(10, 18)[:10]
    run.fill("night-" + night, "pupil-1")
    run.submit("save-rota")
    check(run.driver.find_element(By.ID, "night-%s-error" % night).is_displayed(), "the night is refused")
    run.logout()


def admin_fills_the_rota_grid(run):
    run.login(ADMIN, ADMIN_PASSWORD)
    event_id = run.shared["event_id"]
    run.open("/portal/events/" + event_id)
    run.navigate(By.ID, "rota-link")
    nights = [berlin_local(10, 18)[:10], berlin_local(17, 18)[:10]]
    check(len(run.driver.find_elements(By.CSS_SELECTOR, "table#rota tbody tr")) == 8, "eight weeks, a week a row")
    run.fill("night-" + nights[0], "pupil-1, pupil-2")
    run.fill("night-" + nights[1], "pupil-3")
    run.shot("28-rota", width=1200)
    run.submit("save-rota")
    check("The rota is saved" in run.text(), "saved")
    status, event = run.api_get("/event/" + event_id, ADMIN, ADMIN_PASSWORD)
    check(event["rota"] == {nights[0]: ["pupil-1", "pupil-2"], nights[1]: ["pupil-3"]},
          "the API has each night's persons (got %s)" % event.get("rota"))
    run.navigate(By.ID, "delete-event")
    check("The event is cancelled" in run.text(), "the whole event cancelled")
    status, _ = run.api_get("/event/" + event_id, ADMIN, ADMIN_PASSWORD)
    check(status == 404, "gone from the API (got %d)" % status)
    run.logout()


def mark_newsletter(run, approval):
    """The admin marks the subject Newsletter `"approval": approval` through the API (positional PUT)."""
    token = base64.b64encode(("%s:%s" % (ADMIN, ADMIN_PASSWORD)).encode()).decode()
    status, body = run.http("GET", "/channel")
    for channel in json.loads(body):
        for area in channel["areas"]:
            for subject in area["subjects"]:
                if subject["name"] == "Newsletter":
                    path = "/subject/%s/%s/%s" % (channel["_id"], area["id"], subject["id"])
                    payload = json.dumps({"name": subject["name"], "desc": subject["desc"], "opt": subject["opt"],
                                          "approval": approval}).encode()
                    status, _ = run.http("PUT", path, payload, {"Authorization": "Basic " + token,
                                                                "Content-Type": "application/json"})
                    check(status == 200, "the admin marks Newsletter approval %s (got %d)" % (approval, status))
                    return
    raise Failure("no subject Newsletter")


def fcm_keys(run):
    received = json.loads(urllib.request.urlopen(run.fcm["base_url"] + "/_received", timeout=5).read())
    return [body["message"]["data"].get("msi_key") for body in received]


def a_second_person_approves_a_held_message(run):
    mark_newsletter(run, "required")
    run.login(COMMUNICATOR, COMMUNICATOR_PASSWORD)
    run.click_link("Send a message")
    choose(run, "Riverside High", "Year 10", "Newsletter")
    run.fill("title", "School closed Friday")
    run.fill("message", "The school is closed on Friday for the staff training day.")
    run.submit("send")
    check("waits for a second person's approval" in run.text(), "the confirmation says it waits for approval")
    key = run.driver.find_element(By.ID, "msi-key").text
    run.shot("20-awaiting-approval")
    run.open("/portal")
    check(not run.driver.find_elements(By.ID, "approvals-notice"), "its author is not asked to approve it")
    run.open("/portal/approvals")
    check(not run.driver.find_elements(By.ID, "approval-" + key), "its author does not see it to approve")
    run.logout()
    check(key not in fcm_keys(run), "nothing reached FCM before the approval")

    run.login(ADMIN, ADMIN_PASSWORD)
    check(run.driver.find_element(By.ID, "approvals-count").text == "1", "the dashboard counts one approval")
    run.navigate(By.CSS_SELECTOR, "#approvals-notice a")
    section = run.driver.find_element(By.ID, "approval-" + key)
    check("School closed Friday" in section.text and "staff training day" in section.text,
          "the message is shown as the phones will show it")
    check("passive" in section.text or "active" in section.text, "with its urgency")
    run.shot("21-approvals")
    run.navigate(By.CSS_SELECTOR, "#approval-%s .approve-button" % key)
    check("was approved" in run.text(), "the approval is confirmed")
    for _ in range(60):  # the relay reaches the fake FCM within moments
        if key in fcm_keys(run):
            break
        time.sleep(0.25)
    check(key in fcm_keys(run), "the approved message reached FCM")
    status, message = run.api_get("/message/" + key, COMMUNICATOR, COMMUNICATOR_PASSWORD)
    check(status == 200 and message["approval"]["by"] == ADMIN, "stored with who approved it")
    run.logout()
    mark_newsletter(run, "default")


def admin_reads_the_audit_log(run):
    run.login(ADMIN, ADMIN_PASSWORD)
    run.navigate(By.CSS_SELECTOR, "a[href='/portal/admin/audit']")
    entries = run.driver.find_elements(By.CSS_SELECTOR, "#audit-entries li")
    actions = [entry.find_element(By.CLASS_NAME, "action").text for entry in entries]
    for action in ("cube.channel.create", "token.revoke", "message.send", "message.approve"):
        check(action in actions, "the log lists %s" % action)
    seqs = [int(entry.get_attribute("data-seq")) for entry in entries]
    check(seqs == sorted(seqs, reverse=True) and len(set(seqs)) == len(seqs), "newest first, each entry once")
    check("msi_" not in run.driver.page_source, "no token secret on the page")
    run.shot("22-audit-log")
    run.fill("action", "message.approve")
    run.navigate(By.CSS_SELECTOR, "#audit-filters button")
    rows = run.driver.find_elements(By.CSS_SELECTOR, "#audit-entries li")
    check(len(rows) >= 1 and all(row.find_element(By.CLASS_NAME, "action").text == "message.approve" for row in rows),
          "the action filter keeps only the approvals")
    check(all(row.find_element(By.CLASS_NAME, "actor").text == ADMIN for row in rows), "approved by the admin")
    run.fill("action", "")
    run.fill("actor", COMMUNICATOR)
    run.navigate(By.CSS_SELECTOR, "#audit-filters button")
    rows = run.driver.find_elements(By.CSS_SELECTOR, "#audit-entries li")
    check(len(rows) >= 1 and all(row.find_element(By.CLASS_NAME, "actor").text == COMMUNICATOR for row in rows),
          "the actor filter keeps only what the communicator did")
    run.fill("since", "not a date")
    run.navigate(By.CSS_SELECTOR, "#audit-filters button")
    check(run.driver.find_elements(By.ID, "since-error"), "a time that is not one is refused beside its field")
    run.click_link("Show all")
    check(len(run.driver.find_elements(By.CSS_SELECTOR, "#audit-entries li")) == len(entries) or
          run.driver.find_elements(By.ID, "older"), "showing all again lists what it listed first")
    run.logout()


def staff_sign_in_through_the_provider(run):
    run.driver.delete_all_cookies()
    run.oidc_user("it.teacher@school.test", ["staff"])
    run.open("/portal/login")
    check("Sign in with Test IdP" in run.text(), "the provider's button on the login page")
    run.shot("29-login-with-provider")
    run.navigate(By.ID, "sign-in-provider")
    check("Hello, it.teacher@school.test" in run.text(), "signed in through the provider, as a communicator")
    check(run.session_cookie(), "a portal session")
    run.shot("30-signed-in-through-provider")
    # Signing out at the hub signs out at the provider too, which sends the browser back to the login page.
    run.logout()
    check("You have logged out." in run.text(), "back on the login page after the provider's sign-out")
    check(run.session_cookie() is None, "no session after signing out")
    # Out of every group at the provider: refused, on the login page.
    run.oidc_user("it.teacher@school.test", ["students"])
    run.open("/portal/login")
    run.navigate(By.ID, "sign-in-provider")
    check("none of the groups" in run.text(), "a user in none of the groups is refused")
    check(run.session_cookie() is None, "no session for a refused sign-in")
    run.shot("31-provider-groups-refused")


def six_wrong_passwords_are_throttled(run):
    for attempt in range(1, 7):
        run.login(COMMUNICATOR, "not-the-password")
        expected = "Too many failed logins" if attempt == 6 else "The username or password is not right."
        check(expected in run.text(), "attempt %d: %s" % (attempt, expected))
    run.shot("17-throttled")
    run.login(COMMUNICATOR, COMMUNICATOR_PASSWORD)
    check("Too many failed logins" in run.text(), "even the right password waits out the throttle")


STEPS = [admin_logs_in, admin_builds_channel_area_and_subjects, admin_edits_and_deletes_a_subject,
         a_script_name_shows_as_text, admin_manages_users_and_tokens, admin_imports_a_group_roster,
         logout_ends_the_session,
         communicator_cannot_open_admin_pages, communicator_sends_an_alert_and_an_information,
         the_messages_are_stored_and_reached_the_fake_fcm, the_reach_report_updates_live,
         communicator_adds_and_removes_translations, a_form_without_its_csrf_token_is_refused,
         communicator_sends_to_a_group, communicator_schedules_a_message_and_an_event, admin_fills_the_rota_grid,
         a_second_person_approves_a_held_message, admin_reads_the_audit_log, staff_sign_in_through_the_provider,
         six_wrong_passwords_are_throttled]


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--bin", default=".build/debug")
    parser.add_argument("--screenshots", default="screenshots/portal")
    args = parser.parse_args()
    run = Run(args)
    passed = 0
    try:
        run.start_fake_fcm()
        run.start_fake_oidc()
        run.add_user(ADMIN, ADMIN_PASSWORD, "admin")
        run.add_user(COMMUNICATOR, COMMUNICATOR_PASSWORD, "communicator")
        run.start_hub()
        run.start_browser()
        print("browser tests: hub %s, database %s, screenshots in %s" % (run.base, run.database, run.shots))
        for step in STEPS:
            try:
                step(run)
            except Exception as error:  # noqa: BLE001 - report the step, keep its picture, stop
                print("not ok - %s: %s: %s" % (step.__name__, type(error).__name__, str(error).splitlines()[0]))
                print("".join(line for line in traceback.format_tb(error.__traceback__) if __file__ in line))
                try:
                    run.shot("failed-" + step.__name__)
                    print("  page: %s\n  %s" % (run.driver.current_url, run.text()[:600].replace("\n", "\n  ")))
                except Exception:  # noqa: BLE001
                    pass
                if hasattr(run, "hub_log"):
                    run.hub_log.flush()
                    print(open(run.hub_log.name).read()[-3000:])
                return 1
            passed += 1
            print("ok - " + step.__name__.replace("_", " "))
    finally:
        run.stop()
    print("browser tests: %d of %d passed; screenshots in %s" % (passed, len(STEPS), run.shots))
    return 0


if __name__ == "__main__":
    sys.exit(main())
