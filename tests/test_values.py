"""Numbers as papers and code write them: every notation parses to the same value."""

from __future__ import annotations

import pytest

from sabench.values import (
    NumberMention,
    extract_numbers,
    named_by_its_subject,
    parse_number,
    values_match,
)


def values(text: str) -> list[float]:
    return [m.value for m in extract_numbers(text)]


@pytest.mark.parametrize(
    "text",
    ["3e-4", "3E-4", "0.0003", "3x10^-4", "3×10⁻⁴", "3 · 10^-4", "3*10**-4", "3 \\times 10^{-4}"],
)
def test_scientific_forms_are_one_value(text: str) -> None:
    assert values(text) == [pytest.approx(3e-4, rel=1e-12)]
    assert values_match(text, 0.0003)


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("1k", 1000),
        ("1K", 1000),
        ("1,000", 1000),
        ("1000", 1000),
        ("1_000", 1000),
        ("1M", 1e6),
        ("4.9M", 4.9e6),
        ("8B", 8e9),
        ("2^10", 1024),
        ("2**10", 1024),
        ("2¹⁰", 1024),
        ("10⁻⁴", 1e-4),
        ("1/2", 0.5),
        ("1/64", 1 / 64),
        (".5", 0.5),
        ("-0.5", -0.5),
        ("−2", -2),
    ],
)
def test_number_forms(text: str, value: float) -> None:
    assert values(text) == [pytest.approx(value)]
    assert parse_number(text) == pytest.approx(value)


def test_percent_matches_fraction_and_percentage() -> None:
    (m,) = extract_numbers("50% dropout")
    assert m.percent and m.value == 0.5
    assert values_match(m, 0.5)
    assert values_match(m, 50)
    assert values_match("50%", 0.5)
    assert values_match("20%", "0.2")
    assert not values_match(0.5, 50)  # without a percent sign the scales differ


@pytest.mark.parametrize(
    ("a", "b"),
    [(0.05, 0.005), ("1e-4", "1e-3"), (32, 64), ("1K", 1024), ("50%", 5), (10, "abc")],
)
def test_different_values_do_not_match(a: object, b: object) -> None:
    assert not values_match(a, b)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "text",
    [
        "I3D features",
        "Qwen3 model",
        "Table 6",
        "Eq. (2)",
        "Section 4.1",
        "3D convolution",
        "the 2nd stage",
        "version 1.2.3",
        "blobs-3",
        "ResNet-50",
        "β₁",
        "β1",
        "λ2",
        "conv3x3",
    ],
)
def test_digits_in_names_and_references_are_not_values(text: str) -> None:
    assert values(text) == []


def test_names_of_numbers() -> None:
    ms = extract_numbers("learning rate of 0.05, batch size 128 and T=1000 timesteps")
    assert [(m.value, m.context_words) for m in ms] == [
        (0.05, ("learning", "rate")),
        (128, ("batch", "size")),
        (1000, ("T",)),
    ]
    assert ms[2].after_words == ("timesteps",)
    assert ms[0].text == "0.05" and ms[0].start < ms[0].end


def test_a_greek_letter_with_a_digit_names_the_value_after_it() -> None:
    """``β1=0.9`` is one number named β1 (an optimizer's first beta), not 1 and an unnamed 0.9."""
    ms = extract_numbers("AdamW with β1=0.9, β2=0.999, ε=1e-6")
    assert [(m.value, m.context_words[-1]) for m in ms] == [
        (0.9, "β1"),
        (0.999, "β2"),
        (1e-6, "ε"),
    ]


def test_a_name_after_the_number_keeps_three_words() -> None:
    """ "4096 parallel imagination environments": the thing counted is the third word after it."""
    (m,) = extract_numbers("4096 parallel imagination environments per iteration")
    assert m.after_words == ("parallel", "imagination", "environments")


def test_units_and_lists_take_the_right_name() -> None:
    ms = extract_numbers("450 points in 2 dimensions, a patience of 5 epochs")
    assert [m.after_words for m in ms] == [("points",), ("dimensions",), ("epochs",)]
    assert ms[1].context_words == ()  # "points" belongs to 450, not to 2
    assert ms[2].context_words == ("patience",)
    lo, hi = extract_numbers("centres drawn uniformly in [-10, 10]")
    assert (lo.value, hi.value) == (-10, 10)
    assert hi.context_words == lo.context_words == ("centres", "drawn", "uniformly")
    assert values("x = [128,256,512]") == [128, 256, 512]  # a list, not 128 million
    assert [m.context_words for m in extract_numbers("n_layers=24/36")] == [
        ("n_layers",),
        ("n_layers",),
    ]


def test_a_breaker_word_ends_the_name() -> None:
    (lo, _) = extract_numbers("masks sampled from [0.7, 1.0]")
    assert lo.context_words == ()


@pytest.mark.parametrize(
    ("text", "name"),
    [
        # "<what is set> = <value>": every word before the value names it, past "per"
        (
            "Number of calibration samples per trial in the synthetic experiment = 200",
            ("Number", "calibration", "samples", "trial", "synthetic", "experiment"),
        ),
        (
            "Confidence level for Clopper-Pearson intervals: 0.95",
            ("Confidence", "level", "Clopper-Pearson", "intervals"),
        ),
        # not after "=" or ":": the words back to a breaker, as for any value
        ("the variance is 1/d_k instead of 1", None),
    ],
)
def test_a_lone_value_after_an_equals_sign_is_named_by_the_whole_claim(
    text: str, name: tuple[str, ...] | None
) -> None:
    num = extract_numbers(text)[-1]
    named = named_by_its_subject(text, num)
    if name is None:
        assert named == num
    else:
        assert num.context_words != name
        assert named.context_words == name


def test_values_match_mentions_and_tolerance() -> None:
    m = NumberMention(1000.0, "1k", 0, 2)
    assert values_match(m, "1,000")
    assert values_match(0.1 + 0.2, 0.3)
    assert not values_match(1.0, 1.01)
    assert values_match(1.0, 1.01, rel_tol=0.02)
    assert parse_number("not a number") is None
    assert parse_number("") is None
