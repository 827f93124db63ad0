"""core/patch/settings.py directly: a patch.toml's `[settings.<name>]` is read into a Setting (an
unknown kind, a `render` or a `when` of the wrong shape refused by name), and each value the user's
config gives it is checked: a choice among its choices, a number in its range (whole where it must
be, 0 where it means off), a list of distinct plain tag names or one of its words, whose markers
fit and hold no configured tag. Every refusal is one line naming the key and saying nothing was
changed (or what to fix)."""

from __future__ import annotations

from typing import Any

import pytest

from senpi_guard.core.patch.settings import KINDS, Setting, check, check_markers
from senpi_guard.errors import FatalError

WHERE = "config.toml [patches.demo]"
MARKER = "[{tag} repeated]"


def tags(**more: Any) -> Setting:
    data = {"kind": "tags", "default": ["alpha", "beta"], "words": ["auto"], "known": ["gamma"], **more}
    return Setting.parse("tags", data)


def refused(setting: Setting, value: Any, **kwargs: Any) -> str:
    with pytest.raises(FatalError) as caught:
        check(setting, value, WHERE, **kwargs)
    text = str(caught.value)
    assert "\n" not in text
    return text


# ---- parse ---------------------------------------------------------------------------------------


def test_a_full_declaration_is_read_as_written():
    setting = Setting.parse(
        "least",
        {
            "kind": "number",
            "default": 10,
            "min": 1,
            "max": 1000,
            "whole": True,
            "off_is_zero": True,
            "render": True,
            "reshapes": True,
            "top_level": True,
            "when": {"setting": "labels", "value": "auto"},
            "job_as": "leastBytes",
            "about": "the least bytes",
        },
    )
    assert (setting.kind, setting.default, setting.low, setting.high) == ("number", 10, 1, 1000)
    assert setting.whole and setting.off_is_zero and setting.render and setting.reshapes and setting.top_level
    assert setting.when == ("labels", "auto") and setting.job_as == "leastBytes" and not setting.extension_only


def test_lists_become_tuples_and_absent_keys_their_defaults():
    setting = tags(events=["delta"], choices=["x"])
    assert setting.default == ("alpha", "beta") and setting.words == ("auto",) and setting.events == ("delta",)
    assert setting.known == ("gamma",) and setting.choices == ("x",)
    bare = Setting.parse("mode", {"kind": "choice", "default": "a"})
    assert (bare.render, bare.when, bare.low, bare.high, bare.words) == (False, None, None, None, ())


@pytest.mark.parametrize(("render", "dist", "extension"), [(True, True, False), (False, False, False)])
def test_render_true_or_false_is_the_dist_codes(render, dist, extension):
    setting = Setting.parse("mode", {"kind": "choice", "default": "a", "render": render})
    assert (setting.render, setting.extension_only) == (dist, extension)


def test_render_extension_is_the_extensions_alone():
    setting = Setting.parse("mode", {"kind": "choice", "default": "a", "render": "extension"})
    assert setting.extension_only and not setting.render


@pytest.mark.parametrize("render", ["dist", 2, "true", None])
def test_any_other_render_is_refused_by_name(render):
    with pytest.raises(ValueError, match=r"setting 'mode' has render = .*; use true, false or \"extension\""):
        Setting.parse("mode", {"kind": "choice", "default": "a", "render": render})


def test_render_one_is_refused_not_taken_as_false():
    with pytest.raises(ValueError, match=r"setting 'mode' has render = 1"):
        Setting.parse("mode", {"kind": "choice", "default": "a", "render": 1})


def test_an_unknown_kind_is_refused_by_name():
    assert KINDS == ("tags", "choice", "number")
    with pytest.raises(ValueError, match=r"setting 'mode' has the unknown kind 'flag'"):
        Setting.parse("mode", {"kind": "flag", "default": True})


@pytest.mark.parametrize("when", ["labels", {"setting": "labels"}, {"setting": "a", "value": 1, "also": 2}, ["a", 1]])
def test_a_when_of_another_shape_is_refused(when):
    with pytest.raises(ValueError, match=r"a setting's `when` must be \{setting = "):
        Setting.parse("mode", {"kind": "choice", "default": "a", "when": when})


# ---- check: choice and number --------------------------------------------------------------------


def test_a_choice_is_one_of_its_choices():
    setting = Setting.parse("on_drift", {"kind": "choice", "default": "report", "choices": ["report", "rebuild"]})
    assert check(setting, "rebuild", WHERE) == "rebuild"
    assert refused(setting, "fix") == (
        f"{WHERE}: 'on_drift' is 'fix'; use \"report\" or \"rebuild\"; nothing was changed"
    )
    assert "is ['report']" in refused(setting, ["report"])


def number(**more: Any) -> Setting:
    return Setting.parse("least", {"kind": "number", "default": 10, "min": 1, "max": 1000, **more})


def test_a_number_in_its_range_is_taken_as_given():
    assert check(number(), 1, WHERE) == 1 and check(number(), 2.5, WHERE) == 2.5
    assert check(number(), 1000, WHERE) == 1000


def test_a_whole_number_is_taken_as_an_int():
    taken = check(number(whole=True), 12.0, WHERE)
    assert taken == 12 and isinstance(taken, int)
    assert "must be a whole number from 1 to 1,000" in refused(number(whole=True), 2.5)


@pytest.mark.parametrize("value", [0, 0.5, 1001, -3, float("nan"), float("inf"), "10", True, None])
def test_a_number_out_of_range_or_no_number_is_one_line(value):
    text = refused(number(), value)
    assert text.startswith(f"{WHERE}: 'least' must be a number from 1 to 1,000, got ")
    assert text.endswith("; nothing was changed")


def test_zero_turns_off_a_number_that_says_so_and_false_is_no_zero():
    off = number(off_is_zero=True)
    assert check(off, 0, WHERE) == 0
    assert "from 1 to 1,000 (or 0 for off), got False" in refused(off, False)
    assert "(or 0 for off)" not in refused(number(), 0)


# ---- check: tags --------------------------------------------------------------------------------


def test_a_list_of_plain_tags_is_taken_as_a_tuple():
    assert check(tags(), ["ultrawork-mode", "omo_senpi.task:v2"], WHERE) == ("ultrawork-mode", "omo_senpi.task:v2")
    assert check(tags(), ("a" * 40,), WHERE) == ("a" * 40,)


def test_a_word_stands_for_the_list():
    assert check(tags(), "auto", WHERE) == "auto"
    assert check(tags(), "auto", WHERE, marker=MARKER, max_marker_bytes=64) == "auto"


@pytest.mark.parametrize("value", [[], "alpha", "every", [1, 2], ["ok", None], {"alpha": 1}, None])
def test_what_is_no_list_of_names_is_refused_with_the_settings_own_example(value):
    text = refused(tags(), value)
    assert text == (
        f'{WHERE}: \'tags\' must be a non-empty list of tag names, e.g. tags = ["alpha"] or "auto"; nothing was changed'
    )


def test_the_example_falls_back_to_a_known_tag_then_to_a_placeholder():
    assert 'e.g. tags = ["gamma"]' in refused(tags(default="auto"), [])
    bare = Setting.parse("tags", {"kind": "tags", "default": "auto"})
    assert 'e.g. tags = ["a-tag"]; nothing' in refused(bare, 3)


@pytest.mark.parametrize("tag", ["1st", "has space", "a" * 41, "<b>", "", "ümlaut", "a/b", "x\ny"])
def test_a_tag_that_is_no_plain_name_is_refused_by_name(tag):
    text = refused(tags(), ["alpha", tag])
    assert text.startswith(f"{WHERE}: tag {tag!r} is not a plain tag name (letters, digits, - _ . :; at most 40)")


def test_a_tag_listed_twice_is_refused():
    assert refused(tags(), ["alpha", "beta", "alpha"]) == f"{WHERE}: 'tags' lists a tag twice; nothing was changed"


# ---- markers --------------------------------------------------------------------------------------


def test_a_tag_whose_marker_would_not_fit_is_refused_with_its_size():
    long_tag = "t" * 40
    size = len(MARKER.replace("{tag}", long_tag).encode())
    text = refused(tags(), [long_tag], marker=MARKER, max_marker_bytes=size - 1)
    assert text == (
        f"tag {long_tag!r} is too long: its marker would be {size} bytes (at most {size - 1}); shorten it in the config"
    )
    assert check(tags(), [long_tag], WHERE, marker=MARKER, max_marker_bytes=size) == (long_tag,)


def test_a_marker_is_measured_in_utf8_bytes():
    with pytest.raises(FatalError, match=r"its marker would be 8 bytes \(at most 7\)"):
        check_markers(("ab",), "{tag}·éé", 7)  # (5 characters, 8 bytes)


def test_a_marker_holding_another_configured_tag_is_refused():
    with pytest.raises(FatalError, match=r"the marker for 'a' would contain <b>; rename the tag in the config"):
        check(tags(), ["a", "b"], WHERE, marker="<b>{tag} again</b>", max_marker_bytes=100)
    assert check(tags(), ["a"], WHERE, marker="<b>{tag} again</b>", max_marker_bytes=100) == ("a",)


def test_a_word_checks_the_markers_of_the_tags_it_keeps():
    with pytest.raises(FatalError, match=r"tag 'gamma' is too long"):
        check(tags(), "auto", WHERE, marker=MARKER, max_marker_bytes=5)
