"""Combine the phrase rules and the profanity model into OpenAI-style category scores.

    harassment = max(rule harassment, profanity-model harassment)
    every other category = the rules' score (0.0 when no rule gives it)

The profanity model's "offensive" probability p is scored per clause (see
rules.py) and becomes harassment as p x the clause's target factor (1.0 aimed at
someone, 0.75 about a third person, 0.45 friendly, 0.4 no person at all) x 0.5
when the text reports what someone else said. ``flagged`` is any category >= 0.5.
"""

import rules as rules_mod
from rules import CATEGORIES

FLAG_THRESHOLD = 0.5
SCORED = ("sexual", "sexual/minors", "harassment", "harassment/threatening", "hate", "hate/threatening",
          "self-harm", "self-harm/intent", "self-harm/instructions", "violence", "violence/graphic")
UNSCORED = tuple(c for c in CATEGORIES if c not in SCORED)  # always 0.0


class Scorer:
    def __init__(self, rules_path=None, model=None):
        self.rules = rules_mod.RuleSet(rules_path or rules_mod.DEFAULT_RULES)
        if model is None:
            import profanity

            model = profanity.ProfanityModel()
        self.model = model

    def analyse(self, texts):
        """[(scores, analysis, model harassment)] for each text, in order."""
        analyses = [self.rules.analyse(t) for t in texts]
        clause_texts = [c.text for a in analyses for c in a.clauses]
        probs = iter(self.model.predict(clause_texts))
        out = []
        for a in analyses:
            model_h = 0.0
            for c in a.clauses:
                c.probability = next(probs)
                c.harassment = c.probability * c.factor * (
                    rules_mod.REPORTED_FACTOR if c.reported else 1.0)
                model_h = max(model_h, c.harassment)
            scores = dict(a.scores)
            scores["harassment"] = max(scores["harassment"], model_h)
            for cat in CATEGORIES:
                scores[cat] = round(min(1.0, max(0.0, float(scores[cat]))), 6)
            out.append((scores, a, model_h))
        return out

    def score(self, texts):
        """[{category: score}] for each text (all 13 categories, floats in 0..1)."""
        return [s for s, _, _ in self.analyse(texts)]

    def explain(self, text):
        scores, a, model_h = self.analyse([text])[0]
        lines = [f"text: {text!r}", f"skeleton: {a.skeleton}"]
        lines += [f"variant: {v}" for v in a.variants]
        lines += [f"hit: {h.describe()}" for h in a.hits]
        lines += [f"clause: {c.text!r} p={c.probability:.3f} x{c.factor} ({c.why}"
                  f"{', reported' if c.reported else ''}) -> {c.harassment:.3f}" for c in a.clauses]
        lines.append(f"scores: { {k: v for k, v in scores.items() if v} }")
        return "\n".join(lines)


def flagged(scores):
    return any(v >= FLAG_THRESHOLD for v in scores.values())


if __name__ == "__main__":
    import sys

    s = Scorer()
    for t in sys.argv[1:] or [line.rstrip("\n") for line in sys.stdin]:
        print(s.explain(t))
        print()
