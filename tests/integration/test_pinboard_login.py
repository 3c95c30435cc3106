"""The Pinboard's token cannot be guessed at speed: wrong tokens are limited per address.

After ``LIMIT`` wrong tokens from one address within a minute — through the
login form or an ``Authorization: Bearer`` header — every token try from that
address is answered 429 with ``Retry-After`` (also the right token: a guesser
must not learn it by being let in) until the oldest wrong try is a minute
old. A request without any token is not a try. Other addresses are not
affected. (A real uvicorn server on 127.0.0.1; the throttle's clock is
stepped by the test instead of waiting a minute.)
"""

from __future__ import annotations

import httpx
import pytest

from fold_core.store.file import create_store
from fold_host.pinboard.app import create_app
from fold_host.web.security import LoginThrottle
from fold_host.web.server import Bind, ServerThread

SECRET = "a-long-test-token-0123456789"


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def pinboard(tmp_path):
    create_store(str(tmp_path / "store"))
    clock = Clock()
    app = create_app(str(tmp_path / "store"), token=SECRET, login_throttle=LoginThrottle(clock=clock))
    with ServerThread(app, Bind("127.0.0.1", 0, SECRET)) as running:
        running.clock = clock
        yield running


def login(client: httpx.Client, url: str, token: str) -> httpx.Response:
    form = client.get(url + "login")
    csrf = form.text.split('name="csrf" value="', 1)[1].split('"', 1)[0]
    return client.post(url + "login", data={"token": token, "csrf": csrf})


def test_wrong_tokens_are_limited_per_address(pinboard):
    url, limit = pinboard.url, LoginThrottle.LIMIT
    with httpx.Client() as client:
        for _ in range(3):
            assert client.get(url).status_code == 401  # no token given: not a try
        answers = [login(client, url, f"wrong-token-{n:04d}-xxxxxxxx").status_code for n in range(limit)]
        assert answers == [401] * limit
        refused = login(client, url, "wrong-token-again-xxxxxxxxx")
        assert refused.status_code == 429 and 0 < int(refused.headers["retry-after"]) <= 60
        assert "Too many wrong tokens" in refused.text
        assert login(client, url, SECRET).status_code == 429  # not even the right one while limited
        bearer = client.get(url, headers={"authorization": f"Bearer {SECRET}"})
        assert bearer.status_code == 429
        pinboard.clock.now += 61
        assert login(client, url, SECRET).status_code == 303  # a minute later: let in
        assert client.get(url).status_code == 200


def test_wrong_bearer_tokens_count_too(pinboard):
    url = pinboard.url
    codes = [httpx.get(url, headers={"authorization": f"Bearer wrong-{n}"}).status_code
             for n in range(LoginThrottle.LIMIT + 3)]
    assert codes == [401] * LoginThrottle.LIMIT + [429] * 3
