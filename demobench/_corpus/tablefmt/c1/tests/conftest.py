import pytest


@pytest.fixture
def fruit():
    return [["apples", 3], ["pears", 12], ["figs", 250]]
