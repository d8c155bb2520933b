"""Rule families added for recall on hostile text without swear words.

Each family has positive examples (must reach the listed categories) and benign
counterexamples that share its words (must stay below every threshold Sluice acts
on). All examples were written for these tests; none is taken from Sluice's
moderation fixtures.

Thresholds: a positive must score >= 0.5 in each listed category, except
`sexual`, which must reach 0.8 (Sluice's default review threshold for it). A
benign text must score < 0.4 in every category except `harassment`, and < 0.5 in
`harassment` (0.4 is the lowest threshold Sluice's standard policy acts on).
"""

import pytest

import rules

THREAT = ("harassment/threatening",)
HATE = ("hate",)
SELF = ("self-harm", "self-harm/intent")
ENCOURAGE = ("self-harm",)
SEXUAL = ("sexual",)

FAMILIES = {
    "threat: intensifier between 'i'll' and the verb": (
        [(THREAT, "i will literally strangle you"),
         (THREAT, "im gonna fucking stab him when i see him"),
         (THREAT, "i'll seriously hurt your brother")],
        ["i'll literally die if this gets cancelled",
         "i will honestly hug you when you land",
         "i'll just hit you up later"],
    ),
    "threat: against the reader's property": (
        [(THREAT, "i'm going to set fire to your house"),
         (THREAT, "gonna slash your tires tonight"),
         (THREAT, "ill smash ur windows in")],
        ["i'll smash your high score tonight",
         "can i borrow your car tomorrow",
         "i'll burn you a copy of the album"],
    ),
    "threat: injury that lasts": (
        [(THREAT, "i'll make sure you can't walk again"),
         (THREAT, "im gonna make sure u never use your hands again")],
        ["i'll make sure you never have to walk home alone again",
         "i'll make sure you don't miss the bus again"],
    ),
    "threat: conditional on the reader's life": (
        [(THREAT, "stay away from my sister if you want to live"),
         (THREAT, "if u wanna keep your teeth, pay me back"),
         (THREAT, "unless you value your kneecaps, stop talking")],
        ["if you want to live abroad, learn the language",
         "if you want to live in london you need a good salary"],
    ),
    "threat: something might happen to it": (
        [(THREAT, "be a real pity if anything happened to that van of yours"),
         (THREAT, "next time it won't only be your windows"),
         (THREAT, "next time it'll be your legs")],
        ["what a shame, the train got cancelled again",
         "next time it'll be your turn to drive"],
    ),
    "threat: dare and consequences": (
        [(THREAT, "say that again and see what happens"),
         (THREAT, "touch my car again n find out what happens"),
         (THREAT, "wait and see what happens when i catch you"),
         (THREAT, "keep testing me and you'll regret it")],
        ["try it and see what happens to the dough",
         "let's see what happens when we meet the client",
         "keep going and you'll get there"],
    ),
    "threat: don't let me catch you / pray we don't meet": (
        [(THREAT, "better not let me see u round here"),
         (THREAT, "don't let us catch you walking home"),
         (THREAT, "better hope we never cross paths")],
        ["don't let me catch you skipping leg day",
         "hope we meet again soon!"],
    ),
    "threat: tracking down, doxxing": (
        [(THREAT, "i will track you down irl"),
         (THREAT, "ur ip isnt that hard to find"),
         (THREAT, "i tracked down your home address"),
         (THREAT, "leaking your address tonight"),
         (THREAT, "dropping it here so everyone can pay you a visit")],
        ["can't wait to find you at the convention irl!",
         "i looked up your address on the invite, see you saturday",
         "share your location so we can find you at the festival"],
    ),
    "threat: stalking at home": (
        [(THREAT, "i'm standing outside your bedroom window"),
         (THREAT, "i was watching you through the curtains last night"),
         (THREAT, "i know ur home alone. leave the back door unlocked")],
        ["i saw you through the window of the cafe, waved!",
         "i know you're home alone, want me to bring soup?",
         "i heard you're home alone this weekend, want to come for dinner?",
         "i'm outside the shop, come down"],
    ),
    "threat: family will pay, next on the news, crew": (
        [(THREAT, "you and your kids will pay for that"),
         (THREAT, "your whole family is gonna suffer"),
         (THREAT, "you'll be the next one in the obituaries"),
         (THREAT, "im outside the chippy with my lads. she knows what she did")],
        ["your parents will pay for the wedding",
         "im at the pub with my lads, come join"],
    ),
    "threat: weak (regret, come alone, a gun)": (
        [(THREAT, "you'll regret sending that"),
         (THREAT, "meet me behind the gym. come alone."),
         (THREAT, "im bringing my uncles shotgun"),
         (THREAT, "im taking a knife to school tomorrow")],
        ["come alone or bring a friend, either is fine",
         "buy it, you won't regret it",
         "i'll bring my water gun to the beach",
         "i'll bring a piece of cake for you"],
    ),
    "death wish without 'i'": (
        [(THREAT, "hope you get run over by a lorry"),
         (THREAT, "hoping your plane goes down"),
         (THREAT, "just go rot somewhere else")],
        ["hope you get well soon",
         "hope you burn some calories at the gym today"],
    ),
    "self-harm encouragement: more forms": (
        [(ENCOURAGE, "if i had your face id have hanged myself"),
         (ENCOURAGE, "just end it tonight and do us all a favour"),
         (ENCOURAGE, "go buy yourself a rope"),
         (ENCOURAGE, "swallow the whole packet of painkillers"),
         (ENCOURAGE, "find a tall building and spare us all the misery"),
         (ENCOURAGE, "your parents should have aborted you")],
        ["need to get a rope for the tent",
         "take the whole box of donuts to the office",
         "if i were you i'd take the job",
         "just end it with him already, he's awful"],
    ),
    "sexual: demands for images or acts": (
        [(SEXUAL, "send me some nudes babe"),
         (SEXUAL, "show me ur boobs"),
         (SEXUAL, "send a pic of u in ur underwear"),
         (SEXUAL, "lemme see you naked"),
         (SEXUAL, "whats ur cup size")],
        ["send me the pics from the wedding",
         "show me your new shoes",
         "send me a pic of you in your graduation gown",
         "send me your body measurements for the costume"],
    ),
    "sexual: remarks and propositions": (
        [(SEXUAL, "ur a proper freak in the sheets i bet"),
         (SEXUAL, "you would look hotter without your clothes"),
         (SEXUAL, "stop acting like you're not begging for it"),
         (SEXUAL, "how much for a quickie"),
         (SEXUAL, "once we're alone i'm gonna take your clothes off"),
         (SEXUAL, "ill tell the whole class you're a slut")],
        ["you'd look great in that green jacket",
         "you're a beast in the gym",
         "how much for a night at the airbnb?",
         "nice shop, what time do they open?",
         "once we're alone i'll show you the surprise"],
    ),
    "sexual: quid pro quo": (
        [(SEXUAL, "sleep with me and the promotion is yours"),
         (SEXUAL, "if you want that raise, come up to my hotel room")],
        ["we need to talk about your promotion, come to my office at 3",
         "congrats on the raise, drinks at mine?"],
    ),
    "sextortion": (
        [(SEXUAL + THREAT, "pay me or i'll send your nudes to your boss"),
         (SEXUAL + THREAT, "do what i say or im leaking the pics you sent me"),
         (SEXUAL + THREAT, "im gonna share the videos you sent me")],
        ["pick a restaurant or i'll send the group pics to mum",
         "reply or i'll keep spamming memes"],
    ),
    "sexual: spreading intimate images": (
        [(SEXUAL, "her nudes are all over the group chat"),
         (SEXUAL, "lads go look at his naked pics")],
        ["nude lipstick is everywhere this season",
         "the pics from the party are all over the group chat"],
    ),
    "grooming": (
        [(SEXUAL + ("sexual/minors",), "ur 13? u look so hot, don't tell ur parents"),
         (SEXUAL + ("sexual/minors",), "age is only a number, just delete our chats after"),
         (SEXUAL + ("sexual/minors",), "you're only fifteen? that can be our little secret"),
         (SEXUAL + ("sexual/minors",), "dont tell your mum about us")],
        ["age is just a number, my nan ran a marathon at 80",
         "you're 15 now! happy birthday, send pics of the party",
         "don't tell your mum about the surprise party"],
    ),
    "hate: slur groups, 'those people', stereotypes": (
        [(HATE, "trannies shouldn't be allowed to teach"),
         (HATE, "these people are vermin"),
         (HATE, "i'd never hire muslims, they're all terrorists"),
         (HATE, "asians are too stupid to drive"),
         (HATE, "immigrants are a drain on society"),
         (HATE, "refugees spread disease")],
        ["women are amazing",
         "immigrants are the backbone of the nhs",
         "these people are so kind, the whole village helped",
         "rats carry diseases, call pest control"],
    ),
    "hate: discrimination, conspiracy, expulsion": (
        [(HATE, "we don't rent to mexicans"),
         (HATE, "stop hiring immigrants"),
         (HATE, "jews run hollywood"),
         (HATE, "the holocaust was a hoax"),
         (HATE, "ship them all back on the boats"),
         (HATE, "no gays allowed in here"),
         (HATE, "muslims are not welcome here"),
         (HATE, "migrants are replacing us")],
        ["no men allowed, it's a girls night",
         "immigrants are welcome here!",
         "we should stop hiring contractors",
         "women run the world 💪",
         "they're replacing us with robots at work"],
    ),
    "self-harm (first person): preparation and acts": (
        [(SELF, "i've been stockpiling my sleeping pills"),
         (SELF, "wrote my goodbye letter tonight"),
         (SELF, "gave away my things. wont be needing them"),
         (SELF, "stood on the bridge again thinking about jumping"),
         (SELF, "i want to go to sleep and never wake up"),
         (SELF, "back to cutting again"),
         (SELF, "relapsed last night. fresh cuts"),
         (SELF, "how much insulin would it take to not wake up"),
         (SELF, "whats the lethal dose of tylenol"),
         (SELF, "i'm worthless. i just want to not exist"),
         (SELF, "been thinking about ending it")],
        ["wrote a goodbye card for sarah's leaving do",
         "i'm saving my painkillers for after the surgery",
         "gave away all my old clothes to charity",
         "i'm cutting again tomorrow, book in if you want a trim",
         "so embarrassing i want to disappear",
         "been thinking about ending things with my job"],
    ),
}

EXTRA = {
    "threat: present progressive and lasting harm": (
        [(THREAT, "i'm snapping your neck tomorrow"),
         (THREAT, "we're stabbing you after school"),
         (THREAT, "i'll give you a black eye"),
         (THREAT, "you won't wake up tomorrow"),
         (THREAT, "i swear i'll cut you")],
        ["i'm breaking my back carrying these boxes",
         "we're smashing your record at the relay today",
         "you won't wake up in time if you stay up gaming",
         "i'm gonna cut her hair tomorrow, she wants a bob",
         "i'll cut you in on the profits"],
    ),
    "threat: a crew, a weapon on me, your timetable": (
        [(THREAT, "i'll get the lads to teach you a lesson"),
         (THREAT, "got a blade in my pocket for u"),
         (THREAT, "i know what time your class finishes. the car park's dark")],
        ["i'll send my mates round to help you move",
         "i've got a knife in my bag for the picnic",
         "i know when your shift ends, want a lift?"],
    ),
    "threat: following, not safe, a 'friendly visit'": (
        [(THREAT, "i've been following you home every night"),
         (THREAT, "think you're safe? think again"),
         (THREAT, "we'll pay your dad a friendly visit")],
        ["i've been following you on insta for years",
         "you're not safe driving in this snow",
         "i'll pay you a visit next week!"],
    ),
    "threat: mafia idioms": (
        [(THREAT, "i'd hate for your car to catch fire"),
         (THREAT, "snitches get stitches"),
         (THREAT, "accidents happen to people who talk"),
         (THREAT, "there'll be blood"),
         (THREAT, "you're lucky you're still breathing")],
        ["accidents happen, don't worry about the mug",
         "i would hate for the cake to go to waste",
         "you're lucky the bus waited"],
    ),
    "death wish: too X to live, hurry up and die": (
        [(THREAT, "you're too stupid to live"),
         (THREAT, "hurry up and die")],
        ["you're too young to drink, have a coke",
         "hurry up and get ready"],
    ),
    "self-harm encouragement: yet, deeper, the rope": (
        [(ENCOURAGE, "why haven't you hanged yourself yet"),
         (ENCOURAGE, "cut deeper next time"),
         (ENCOURAGE, "i'd buy you the rope myself"),
         (ENCOURAGE, "the rope is calling your name"),
         (ENCOURAGE, "your family would throw a party if you died")],
        ["why haven't you booked yourself a holiday yet",
         "cut deeper into the wood next time",
         "i'll buy you the rope swing for your birthday",
         "we'll throw a party when you get back"],
    ),
    "hate: expulsion, segregation, conspiracy": (
        [(HATE, "deport every single muslim"),
         (HATE, "immigrant scum"),
         (HATE, "keep the gays away from our schools"),
         (HATE, "women belong in the kitchen"),
         (HATE, "immigrants should be hunted down"),
         (HATE, "jews are behind every war"),
         (HATE, "we should ban muslims from entering the country")],
        ["the only good thing about monday is lunch",
         "keep the dogs away from the kids' food",
         "pond scum everywhere after the rain",
         "women belong in parliament"],
    ),
    "sexual: undressing, leaking, looking": (
        [(SEXUAL, "show me what's under your dress"),
         (SEXUAL, "take your top off on cam"),
         (SEXUAL + THREAT, "i'll leak your vids unless you meet me"),
         (SEXUAL, "i saw your nipples through your shirt today")],
        ["show me what's under the sofa cushion, i lost my keys",
         "take off your shoes before you come in",
         "send me a pic of your cat"],
    ),
    "self-harm (first person): more forms": (
        [(SELF, "i don't deserve to be alive"),
         (SELF, "i can't stop picturing my funeral"),
         (SELF, "the blade is in my hand"),
         (SELF, "i almost went through with it last night"),
         (SELF, "sorry mum, i couldn't cope any more"),
         (SELF, "i've decided today is the day")],
        ["i almost jumped out of my skin",
         "i can't stop thinking about that film",
         "sorry, i can't take it anymore, this wifi is awful",
         "i've decided today is the day i start running"],
    ),
    "last round: bones, bottles, dead men, the railway, readiness": (
        [(THREAT, "i'm going to break every bone in your body"),
         (THREAT, "i'll smash a glass over your head"),
         (THREAT, "you're dead meat if you come round here again"),
         (ENCOURAGE, "go lie on the railway line"),
         (ENCOURAGE, "the best thing you could do is disappear"),
         (HATE, "homosexuality is a mental illness"),
         (HATE, "way too many muslims around here"),
         (SELF, "i'm ready to die"),
         (SELF, "i won't be a burden to anyone much longer")],
        ["i'm ready to die on this hill, pineapple belongs on pizza",
         "so many muslims in the park celebrating eid, lovely atmosphere",
         "count your days off before you book the trip",
         "kids, don't play on the railway",
         "i'm ready to go, where are you"],
    ),
}
FAMILIES.update(EXTRA)


def _cases(kind):
    for family, (pos, neg) in FAMILIES.items():
        items = pos if kind == "pos" else neg
        for item in items:
            yield pytest.param(family, item, id=f"{family[:30]}|{(item[1] if kind == 'pos' else item)[:35]}")


@pytest.mark.parametrize("family,case", list(_cases("pos")))
def test_family_positive(scorer, family, case):
    cats, text = case
    scores = scorer.score([text])[0]
    for cat in cats:
        need = 0.8 if cat == "sexual" else 0.5
        assert scores[cat] >= need, f"{family}: {cat} {scores[cat]}\n" + scorer.explain(text)


@pytest.mark.parametrize("family,text", list(_cases("neg")))
def test_family_benign_counterexample(scorer, family, text):
    scores = scorer.score([text])[0]
    high = {c: v for c, v in scores.items()
            if v >= (0.5 if c == "harassment" else 0.4)}
    assert not high, f"{family}\n" + scorer.explain(text)


def test_families_have_positive_and_benign_examples():
    for family, (pos, neg) in FAMILIES.items():
        assert len(pos) >= 2 and len(neg) >= 2, family


# ---------------------------------------------------------------- engine features used by them


def test_far_gap_crosses_sentences_but_star_does_not(tmp_path):
    path = tmp_path / "far.tsv"
    path.write_text("tier\tt\tviolence=0.75\n"
                    "rule\tt\tred ** blue\n"
                    "rule\tt\tgreen * yellow\n", encoding="utf-8")
    rs = rules.RuleSet(str(path))
    assert rs.analyse("red car. the sky is blue").scores["violence"] == 0.75
    assert rs.analyse("green car. yellow sky").scores["violence"] == 0.0
    assert rs.analyse("green car yellow sky").scores["violence"] == 0.75
    # A negation inside a ** gap does not negate the hit.
    assert rs.analyse("red, don't go. blue").scores["violence"] == 0.75


def test_tier_joke_factor(tmp_path):
    path = tmp_path / "joke.tsv"
    path.write_text("tier\tt\tself-harm=0.8 joke=0.5\n"
                    "tier\tu\tself-harm=0.8\n"
                    "rule\tt\tpurple\n"
                    "rule\tu\torange\n"
                    "joke\t-\tlol\n", encoding="utf-8")
    rs = rules.RuleSet(str(path))
    assert rs.tiers["t"] == {"self-harm": 0.8}  # the option is not a category
    assert rs.analyse("purple lol").scores["self-harm"] == pytest.approx(0.4)
    assert rs.analyse("orange lol").scores["self-harm"] == pytest.approx(0.8 * rules.JOKE_FACTOR)


def test_first_person_self_harm_with_laughter_drops_below_review(scorer):
    s = scorer.score(["i want to die lol my mum saw my search history"])[0]
    assert max(s["self-harm"], s["self-harm/intent"]) < 0.4
    # Encouragement keeps the ordinary laughter factor: "kys lol" is still flagged.
    assert scorer.score(["kys lol"])[0]["self-harm"] >= 0.4


def test_sexual_and_hate_take_no_laughter_discount(scorer):
    plain = scorer.score(["send me nudes"])[0]["sexual"]
    assert scorer.score(["send me nudes lol"])[0]["sexual"] == plain >= 0.8


def test_reported_grooming_stays_below_the_minors_block(scorer):
    # Sluice blocks sexual/minors from 0.4; a parent asking about it must not be blocked.
    s = scorer.score(["a guy told my son 'you're 12? send me a selfie', what do i do"])[0]
    assert s["sexual/minors"] < 0.4


def test_moderation_rules_about_phrases_are_reported_speech(scorer):
    s = scorer.score(["heads up: telling anyone to kys gets you banned"])[0]
    assert s["self-harm"] < 0.4
