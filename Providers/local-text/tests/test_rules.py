"""The normaliser, the rules file and the combined scorer, in process.

The dev set (tests/data/hostile.tsv, tests/data/benign.txt) is what the rules
were written against; see the comment at the top of each file.
"""

import textwrap

import pytest

from conftest import benign_examples, hostile_examples

import rules  # noqa: E402  (conftest puts Providers/local-text on sys.path)
import scorer as scorer_mod  # noqa: E402

HOSTILE = hostile_examples()
BENIGN = benign_examples()
FLAG = scorer_mod.FLAG_THRESHOLD


# ---------------------------------------------------------------- dev set


def test_dev_set_is_big_enough():
    assert len(HOSTILE) >= 40
    assert len(BENIGN) >= 40
    assert len(set(t for _, t in HOSTILE)) == len(HOSTILE), "duplicate hostile example"
    assert len(set(BENIGN)) == len(BENIGN), "duplicate benign example"
    for cats, _ in HOSTILE:
        assert set(cats) <= set(rules.CATEGORIES), cats


def test_dev_set_hostile_examples_have_no_swear_words(scorer):
    # The point of the phrase rules: hostility the profanity model cannot see.
    # The model's raw probability (every clause, no target factor) stays modest
    # for most of them; this guards against the set drifting into plain insults.
    high = []
    for _, text in HOSTILE:
        p = max(scorer.model.predict([text]))
        if p >= 0.97:
            high.append((round(p, 3), text))
    assert len(high) <= len(HOSTILE) // 4, high


@pytest.mark.parametrize("cats,text", HOSTILE, ids=[t[:40] for _, t in HOSTILE])
def test_hostile_example_scores_in_its_categories(scorer, cats, text):
    scores = scorer.score([text])[0]
    low = {c: scores[c] for c in cats if scores[c] < FLAG}
    assert not low, "\n" + scorer.explain(text)
    assert scorer_mod.flagged(scores)


@pytest.mark.parametrize("text", BENIGN, ids=[t[:40] for t in BENIGN])
def test_benign_example_scores_below_threshold_everywhere(scorer, text):
    scores = scorer.score([text])[0]
    high = {c: v for c, v in scores.items() if v >= FLAG}
    assert not high, "\n" + scorer.explain(text)


def test_unscored_categories_are_always_zero(scorer):
    texts = [t for _, t in HOSTILE] + BENIGN
    for scores in scorer.score(texts):
        for cat in scorer_mod.UNSCORED:
            assert scores[cat] == 0.0
    assert set(scorer_mod.UNSCORED) == {"illicit", "illicit/violent"}


# ---------------------------------------------------------------- normaliser


@pytest.mark.parametrize(
    "text,expected",
    [
        ("KYS", "kys"),
        ("kyyyys", "kys"),
        ("k1ll y0urs3lf", "ki yourseif"),
        ("kill yourself", "ki yourseif"),
        ("I'll", "i"),
        ("you're", "youre"),
        ("sh!t", "shit"),
        ("$hit", "shit"),
        ("a$$", "as"),
        ("fuuuuck", "fuck"),
        ("lmaooooo", "imao"),
        ("hahahaha", "haha"),
        ("\u0456mm\u0456gr\u0430nts", "imigrants"),  # Cyrillic look-alikes
        ("k\u200bys", "kys"),  # zero-width space
        ("ｋｙｓ", "kys"),  # full-width letters (NFKC)
        ("café", "cafe"),
        ("@bob you", "@user you"),
        ("meet at 5pm, ok?", "met at 5pm , ok #"),
        ('he said "go"', 'he said " go "'),
    ],
)
def test_normalize(text, expected):
    assert rules.normalize(text) == expected


def test_laughing_emoji_become_lol():
    assert rules.tokenize("i'm dying 😂") == ["i'm", "dying", "lol"]
    assert rules.tokenize("that's 💀") == ["that's", "lol"]


def test_pure_numbers_are_not_leetspeak():
    assert rules.tokenize("call 911 at 10:30") == ["call", "911", "at", "10", "30"]
    assert rules.tokenize("h3ll0") == ["hello"]


def test_variants_glue_spelled_out_letters_and_split_run_together_words(ruleset):
    _, skel, extra = ruleset._variants("k y s")
    assert skel == ["k", "y", "s"] and ["kys"] in extra
    _, _, extra = ruleset._variants("g o   d i e")
    assert ["go", "die"] in extra
    _, _, extra = ruleset._variants("gohangyourself now")
    assert ["go", "hang", "yourseif", "now"] in extra
    _, _, extra = ruleset._variants("k.y.s")
    assert ["kys"] in extra
    # Ordinary long words are left alone.
    _, skel, extra = ruleset._variants("understanding documentation")
    assert extra == []


# ---------------------------------------------------------------- context


def _hit_tiers(ruleset, text):
    return {h.rule.arg for h in ruleset.analyse(text).hits}


def test_benign_rewrites_happen_before_rules(ruleset):
    a = ruleset.analyse("i'd kill for a coffee")
    assert a.hits == [] and "ki" not in a.skeleton.split()
    # ... and the profanity model sees the rewritten clause, not the idiom.
    assert [c.text for c in a.clauses] == ["i'd want"]


def test_negation_discounts(scorer):
    plain = scorer.score(["kill yourself"])[0]
    negated = scorer.score(["please don't kill yourself"])[0]
    assert plain["self-harm"] >= FLAG > negated["self-harm"]
    assert negated["self-harm"] == pytest.approx(plain["self-harm"] * rules.NEGATED_FACTOR, abs=1e-6)
    assert scorer.score(["i would never hurt you"])[0]["harassment/threatening"] < FLAG


def test_why_dont_you_is_not_a_negation(scorer):
    assert scorer.score(["why don't you kys"])[0]["harassment"] >= FLAG
    assert scorer.score(["why dont you just kill yourself"])[0]["self-harm"] >= FLAG


def test_reported_speech_is_scored_lower_but_not_zero(scorer):
    direct = scorer.score(["kys"])[0]
    reported = scorer.score(["he told me to kys, what do I do"])[0]
    assert 0 < reported["harassment"] < FLAG <= direct["harassment"]
    assert reported["self-harm"] == pytest.approx(direct["self-harm"] * rules.REPORTED_FACTOR, abs=1e-6)


def test_quotes_discount_only_when_the_quote_is_talked_about(ruleset):
    talked_about = ruleset.analyse('"i know where you live" is such a creepy movie line')
    assert talked_about.hits and all(
        any(n == "quoted" for n, _ in h.factors) for h in talked_about.hits)
    aimed = ruleset.analyse('"kys" - yes, you')
    assert aimed.hits and not any(h.factors for h in aimed.hits)


def test_laughter_lowers_but_keeps_threats(scorer):
    plain = scorer.score(["i will kill you"])[0]["harassment/threatening"]
    joking = scorer.score(["i will kill you lol"])[0]["harassment/threatening"]
    assert joking == pytest.approx(plain * rules.JOKE_FACTOR, abs=1e-6)
    assert joking >= FLAG


def test_laughter_does_not_lower_hate(scorer):
    assert scorer.score(["immigrants are vermin lol"])[0]["hate"] == \
        scorer.score(["immigrants are vermin"])[0]["hate"]


def test_first_person_self_harm_goes_to_intent_not_harassment(scorer):
    s = scorer.score(["i want to die"])[0]
    assert s["self-harm/intent"] >= FLAG and s["harassment"] < FLAG


def test_encouraging_self_harm_is_harassment_not_intent(scorer):
    s = scorer.score(["kys"])[0]
    assert s["harassment"] >= FLAG and s["self-harm"] >= FLAG
    assert s["self-harm/intent"] == 0.0


# ---------------------------------------------------------------- profanity-model targeting


def test_untargeted_profanity_is_capped(scorer):
    s, a, model_h = scorer.analyse(["this sucks"])[0]
    assert a.clauses[0].probability > 0.9  # the model itself finds it offensive
    assert s["harassment"] == pytest.approx(a.clauses[0].probability * rules.UNTARGETED_FACTOR, abs=1e-6)
    assert s["harassment"] < FLAG


def test_targeted_insult_keeps_the_model_probability(scorer):
    for text in ["you are a stupid idiot", "shut up", "loser", "she's such a bitch"]:
        assert scorer.score([text])[0]["harassment"] >= 0.7, scorer.explain(text)


def test_self_deprecation_is_not_harassment(scorer):
    assert scorer.score(["i'm such an idiot, i forgot my keys"])[0]["harassment"] < FLAG


def test_friendly_profanity_is_capped(scorer):
    assert scorer.score(["you're fucking awesome"])[0]["harassment"] < FLAG
    assert scorer.score(["you're a fucking idiot"])[0]["harassment"] >= FLAG


# ---------------------------------------------------------------- scorer shape


def test_scores_have_all_13_categories_in_range(scorer):
    out = scorer.score(["hello", "", "i will kill you", "😂" * 50, "a" * 5000])
    assert len(out) == 5
    for s in out:
        assert list(s) == list(rules.CATEGORIES)
        assert all(isinstance(v, float) and 0.0 <= v <= 1.0 for v in s.values())


def test_batch_scoring_equals_one_by_one(scorer):
    texts = [t for _, t in HOSTILE[:20]] + BENIGN[:20]
    assert scorer.score(texts) == [scorer.score([t])[0] for t in texts]


def test_rule_hit_scores_are_the_documented_tier_scores(ruleset):
    a = ruleset.analyse("i know where you live")
    assert a.scores["harassment/threatening"] == ruleset.tiers["threat_veiled"]["harassment/threatening"]


# ---------------------------------------------------------------- rules file


def test_every_tier_is_used_and_every_rule_has_anchors(ruleset):
    used = {r.arg for r in ruleset.by_kind["rule"]}
    assert used == set(ruleset.tiers)
    for kind in ("rule", "benign"):
        for r in ruleset.by_kind[kind]:
            assert r.anchors, f"{r.where} can never be skipped: give it a literal word"


def test_tier_scores_are_documented_in_readme(ruleset):
    readme = (rules.HERE + "/README.md")
    text = open(readme, encoding="utf-8").read()
    for name in ruleset.tiers:
        assert f"`{name}`" in text, f"tier {name} is not in README.md"


@pytest.mark.parametrize(
    "body,message",
    [
        ("bogus\t-\tx", "unknown kind"),
        ("rule\tnope\tkill you", "unknown tier"),
        ("tier\tt\tharassment=2", "out of 0..1"),
        ("tier\tt\tnonsense=0.5", "bad score"),
        ("tier\tt\tharassment=0.5\nrule\tt\t(kill you", r"missing '\)'"),
        ("tier\tt\tharassment=0.5\nrule\tt\t{nothing} you", "unknown name"),
        ("define\ta\t{a}\ntier\tt\tharassment=0.5\nrule\tt\t{a}", "refers to itself"),
        ("tier\tt\tharassment=0.5\nrule\tt", "3 tab-separated columns"),
        ("# only comments", "no rules"),
    ],
)
def test_rules_file_errors_are_clear(tmp_path, body, message):
    path = tmp_path / "bad.tsv"
    path.write_text(textwrap.dedent(body) + "\n", encoding="utf-8")
    with pytest.raises(rules.RuleFileError, match=message):
        rules.RuleSet(str(path))


def test_small_custom_rules_file(tmp_path):
    path = tmp_path / "mini.tsv"
    path.write_text(
        "# a tiny rules file\n"
        "define\tthing\tgizmo | widget\n"
        "tier\tt\tviolence=0.75\n"
        "rule\tt\tsmash (the | your)? {thing}\n"
        "benign\tfix\tsmash the widget bug\n",
        encoding="utf-8",
    )
    rs = rules.RuleSet(str(path))
    assert rs.analyse("I will SM4SH your g1zm0!").scores["violence"] == 0.75
    assert rs.analyse("smash the widget bug").scores["violence"] == 0.0
