"""Never invent (SPEC §8.10, issue 26): is a reply to a question about the owner's life made of
what the turn was shown? The signs need no word list of facts: a number or a name nothing shown
holds, the owner's life told in Eva's own voice, or one of the owner's people asked about by
role whom nothing shown names, or named with someone else's name. The judge
(:class:`core.chat.judge.ReplyJudge`) holds a first sentence back until these say it is
sound."""

from __future__ import annotations

import functools
import os
import re
from typing import NamedTuple

from core import timeframe
from core.chat.owner_message import EVA_NAMES
from core.language import CHOICE, is_question
from core.sleep.candidates import ROLES, roles, script
from core.text import (
    NOT_NAMES,
    is_stopword,
    name_group,
    name_stems,
    name_words,
    names,
    numbers,
    sound_key,
    stem_token,
    stems,
    transliterate,
)

# SPEC §8.10, issue 26: what Eva says about the owner comes from memory, the summaries or the
# live window. Measured on the default model, for questions nothing remembered answers: "Сколько
# мне лет?" → "Мне 12 лет.", "Какой спорт у моего сына?" → "Спорт у моего сына - футбол.",
# "Which language am I learning these days?" → "I am learning Russian.", "Какая у меня любимая
# книга?" → "Я не люблю никаких книг." Two signs need no word list of facts: the reply names a
# number or a name that nothing the turn was shown holds, or it speaks of the owner's life in
# the first person (Eva's own voice) — the grammar of the answer, not its topic.
_FIRST_TEXT = (
    "я мне меня мной мною мой моя моё мое мои моего моей моему моим моих моею мою моём моем "
    "моими "
    "i i'm i've i'd i'll me my mine myself"
)
_SECOND_TEXT = (
    "ты тебя тебе тобой тобою твой твоя твоё твое твои твоего твоей твоему твоим твоих твою "
    "твоём твоем твоими вашу вашем вашими вы вас "
    "вам вами ваш ваша ваше ваши вашего вашей вашему вашим ваших you you're you've you'd "
    "you'll your yours yourself yourselves u"
)
_FIRST_PERSON = frozenset(_FIRST_TEXT.split())  # closed word classes, not a list of facts
_SECOND_PERSON = frozenset(_SECOND_TEXT.split())
# "my" and "your": whose, never what (the contracted forms aside: "ill" and "id" are words)
PERSONAL = frozenset(w for w in _FIRST_PERSON | _SECOND_PERSON if "'" not in w)
# The first person plural of the owner's message is the owner's household ("Как зовут нашу
# собаку?", "When is our trip to Sochi?"): Eva has none. Seen on an unseen scenario: "Что мы
# сейчас ремонтируем дома?" was not taken for a question about the owner, and "Моя жена Alesya…
# переводит для судей здесь." (the owner's life in Eva's voice, and no answer) was shown. The
# six such questions of the project's companion scenarios all ask about the owner's life.
_OUR_TEXT = (
    "мы нас нам нами наш наша наше наши нашего нашей нашему нашим наших нашу нашем нашими "
    "we us our ours we're we've we'd we'll ourselves"
)
_OURS = frozenset(_OUR_TEXT.split())


def _ours_in(text: str) -> set[str]:
    """The first person plural words of ``text``; a word in capitals is an acronym, not a
    pronoun (measured on LoCoMo's 999 dev questions: the 4 that held "us" all meant the US —
    "Around which US holiday did Maria get into a car accident?")."""
    words = re.findall(r"[\w']+", text.replace("\u2019", "'"))
    return {w.lower() for w in words if not (len(w) > 1 and w.isupper())} & _OURS


# a reply that says it does not know, or that the owner has not told it (then a question back)
_ADMITS = re.compile(
    r"не знаю|не помню|не уверен|не говорил|не рассказыв|не упомина|нет (информации|данных|"
    r"сведений)|не в курсе|понятия не имею|нет в (моей )?памяти|не сохран|"
    r"don't know|do not know|not sure|no idea|don't remember|do not remember|don't recall|"
    r"can't recall|can't remember|haven't (told|mentioned|shared|said)|"
    r"didn't (tell|mention|share|say)|never (told|mentioned)|not in my memory|"
    r"don't have (that|this|any (information|info|record))|no information",
    re.IGNORECASE,
)


def _words(text: str) -> set[str]:
    """The words of ``text``, lowercased; a hyphenated compound is one word: "me-time" holds no
    "me" (LoCoMo dev: "by carving out some me-time each day…", a gold answer, read as Eva's own
    voice)."""
    return set(re.findall(r"[\w']+(?:-[\w']+)*", text.lower().replace("\u2019", "'")))


def in_first_person(text: str) -> bool:
    """``text`` speaks in the first person, singular or plural ("my", "I", "мне", "our",
    "нашу")."""
    return bool(_words(text) & _FIRST_PERSON or _ours_in(text))


# Kinship roles (core.sleep.candidates.ROLES): in Russian one's own family goes without "my"
# ("Сколько лет сыну?", "Где живёт сестра?", "Какая машина у папы?" — the grammar of the
# language, not a list of facts). Friends, colleagues and children in general are left out:
# "Что подарить другу?", "Почему дети любят сладкое?" ask about no one of the owner's.
_KIN_TEXT = (
    "wife husband partner son daughter sister brother mother father grandparent cousin nephew "
    "niece uncle aunt grandchild in-law step-parent godparent"
)
_KIN = frozenset(_KIN_TEXT.split())
# whose, when not the owner's: "твою маму", "его жену", "свою сестру"
_THEIRS_TEXT = (
    "его её ее их свой своя своё свое свои своего своей своему своим своих свою своём своем"
)
_OTHERS = _SECOND_PERSON | frozenset(_THEIRS_TEXT.split())


def bare_kin(question: str) -> set[str]:
    """The kinship roles a Russian question names with no one's possessive, none of another
    person's ("жену Андрея"): the owner's own family, as Russian says it. Empty for English (it
    says "my"), a sentence that is no question, or a question in the first person (the owner's
    by :func:`in_first_person` anyway)."""
    if script(question) != "ru" or not is_question(question) or in_first_person(question):
        return set()
    words = _WORD.findall(question)
    if any(w[:1].isupper() and w.lower() not in EVA_NAMES for w in words[1:]):
        return set()  # "Что сказал Пушкин о жене?": someone named may be whose
    out: set[str] = set()
    for i, word in enumerate(words):
        low = word.lower()
        kin = _kin_of(low)
        if kin is None:
            if _INFINITIVE.search(low):
                # advice, not a fact: "Что подарить маме?", "Как помочь сестре?" ask what to
                # do, and memory need not hold a mother for an answer
                return set()
            continue
        if i > 0 and words[i - 1].lower() in _OTHERS:
            continue
        if i + 1 < len(words) and words[i + 1][:1].isupper():
            continue  # "жену Андрея": Andrey's wife
        out.add(kin)
    return out


# a Russian infinitive, the verb of a question asking what to do ("подарить", "помочь",
# "объяснить", "научиться"); four letters at least before it, so "путь" or "сеть" are none
_INFINITIVE = re.compile(r"^[а-яё]{3,}(?:ть|ти|чь|ться|тись)$")


def _kin_of(word: str) -> str | None:
    """The kinship role ``word`` names (:func:`_role_of`), or None."""
    role = _role_of(word)
    return role if role in _KIN else None


def asks_about_owner(text: str, support: str = "") -> bool:
    """A question about the owner's own life: "Сколько мне лет?", "Where does my sister
    live?", "What do I do on weekends?" (a question holding the first person singular, or the
    plural: the owner's household, "Как зовут нашу собаку?") — or
    about someone of it the turn was shown by name: "How old is Isla?" when the memory holds
    Isla, the owner's daughter (measured on an unseen scenario: "Isla is 6 years old", an age
    nobody told). A name nothing shown holds (a public figure) leaves the question free."""
    if not is_question(text):
        return False
    if in_first_person(text) or bare_kin(text):
        return True
    rest = support.replace(text, " ") if support else ""  # the question itself holds it
    known = _support_stems(rest) if rest.strip() else set()
    return any(group & known for group in name_stems(text))


_WORD = re.compile(r"[^\W\d_][\w'’-]*")
ROLE_SPAN = 2  # words: a role word this close to a name says who they are ("Wife is Sunita")


def _role_beside(line: str, group: frozenset[str]) -> bool:
    """``line`` names the person of ``group`` with a role word within :data:`ROLE_SPAN` words
    ("Wife is Sunita", "her boyfriend Tyler", "Сын Олег в Норильске")."""
    for sentence in _SENTENCES.split(line):
        words = _WORD.findall(sentence)
        for i, word in enumerate(words):
            if not group & (set(stems(word)) | {word.lower()}) or _called(sentence, words, i):
                continue
            for j in range(max(0, i - ROLE_SPAN), min(len(words), i + 1 + ROLE_SPAN)):
                # "…your kids" is the other person's family, not who they are
                if j != i and _is_role_word(words[j]) and not _second_before(words, j):
                    return True
    return False


_SENTENCES = re.compile(r"(?<=[.!?])\s+")


def _called(sentence: str, words: list[str], i: int) -> bool:
    """The ``i``-th of the ``words`` of ``sentence`` is a name said to someone, not of them: it
    opens the sentence, after at most two words and no role word ("Yeah Maria!", "Hey John, my
    kids…", not "Wife is Sunita, kids…"), and a comma or an exclamation follows it (LoCoMo: the
    owner's lines talk to the other speaker by name)."""
    if i > 2 or any(_is_role_word(w) for w in words[:i]):
        return False
    return re.search(rf"\b{re.escape(words[i])}\s*[,!]", sentence) is not None


def _second_before(words: list[str], j: int) -> bool:
    return j > 0 and words[j - 1].lower() in _SECOND_PERSON


def _role_of(word: str) -> str | None:
    """The role ``word`` names (:data:`~core.sleep.candidates.ROLES`) with at most a two-letter
    ending ("wife", "сына", "friends", "мамой"), or None; "moments" and "friendship" name none."""
    for name, rx in ROLES:
        m = rx.match(word)
        if m and len(word) - m.end() <= 2:
            return name
    return None


def _is_role_word(word: str) -> bool:
    return _role_of(word) is not None


def asks_about_owners_people(question: str, support: str) -> bool:
    """A question about one of the owner's people by name, not in the first person: a name a
    shown line gives a role ("How old is Sunita?" beside "Wife is Sunita…"), and no line says is
    the owner's own ("The owner's name is Caroline."). Measured: 0 of LoCoMo dev's 762 questions
    with evidence (all the owner speaker's turns and "The owner's name is …" as the support),
    where a check of questions about a speaker by name turned right answers into "I don't know";
    44 of the 58 third-person unknown questions of bench.owner_questions (dev and test). A role
    alone ("Сколько лет дочке?") is left out: "Why do kids like candy?" is no question about
    the owner's children."""
    lines = [line for line in support.replace(question, " ").splitlines() if line.strip()]
    for group in name_stems(question):
        theirs = [line for line in lines if group & _support_stems(line)]
        if any(_role_beside(line, group) for line in theirs) and not any(
            _names_the_owner(line, [group]) for line in theirs
        ):
            return True
    return False


def says_not_knowing(text: str) -> bool:
    """The text says it does not know (without the asking back :func:`admits_not_knowing`
    counts too)."""
    return bool(_ADMITS.search(text.replace("\u2019", "'")))


def admits_not_knowing(text: str) -> bool:
    """The reply says it does not know, or asks back (it ends with a question mark)."""
    return says_not_knowing(text) or text.rstrip(" )»\"'").endswith("?")


# Eva reporting her own memory before what it holds: "I remember that Anna is a doctor in
# Moscow." is her voice about her memory, not the owner's life told as hers (measured on the
# default model, bench.chat: that answer to "What do you remember about my sister?" was judged
# invented, and the retry said "I don't know"). Only the clause goes; a first person after it
# still counts ("I remember that I am learning Russian").
_REPORTS = re.compile(
    r"^\W*(?:as far as i (?:can )?(?:remember|recall|know)|if i (?:remember|recall) (?:correctly|"
    r"right)|i (?:do )?(?:remember|recall|know)|from what i remember|"
    r"насколько я (?:помню|знаю)|если я (?:правильно )?помню|я (?:помню|знаю)|помню)"
    r"(?:,?\s*(?:that|что))?[\s,:]*",
    re.IGNORECASE,
)


def speaks_as_owner(text: str) -> bool:
    """Eva's own voice where the owner's belongs: the text is in the first person singular and
    never addresses the owner ("Мне 12 лет.", "I am learning Russian."). An opening that
    reports Eva's memory ("I remember that …", "Насколько я помню, …") is not counted."""
    w = _words(_REPORTS.sub("", text.strip(), count=1))
    return bool(w & _FIRST_PERSON) and not w & _SECOND_PERSON


# The owner's own words given back to the owner (English): the first person singular's closed
# word class in the second person, "am"/"was" after "I" agreeing. Seen on an unseen scenario
# (default model): "Which football team do I support?" was answered with the memory itself,
# "Hibs are my team, I've had a season ticket at Easter Road for fifteen years." — every fact
# the memory's, only the voice Eva's — so it was held as invented, and the retry said "I don't
# know". Russian verbs change with the person ("я ищу" / "ты ищешь"): see _TO_SECOND_RU.
_TO_SECOND = {
    "i": "you",
    "me": "you",
    "my": "your",
    "mine": "yours",
    "myself": "yourself",
    "i'm": "you're",
    "i've": "you've",
    "i'd": "you'd",
    "i'll": "you'll",
}
_AGREEING = {"am": "are", "was": "were"}
_EN_WORD = re.compile(r"[A-Za-z]+(?:['\u2019][A-Za-z]+)?")
_CYRILLIC = re.compile("[а-яёА-ЯЁ]")


# Russian: the first person singular's closed word class in the second ("ты": Eva's own "Расскажешь?"),
# and a present tense verb right after "я" only where its ending tells its conjugation (the
# regular first conjugation: "работаю" → "работаешь", "рисую" → "рисуешь", "занимаюсь" →
# "занимаешься"). Any other such verb ("живу", "люблю", "хожу") leaves the text unturned: it
# would be guessed. The past tense and a noun need nothing ("я работала", "я учитель").
_TO_SECOND_RU = {
    "я": "ты",
    "меня": "тебя",
    "мне": "тебе",
    "мной": "тобой",
    "мною": "тобою",
    "мой": "твой",
    "моя": "твоя",
    "моё": "твоё",
    "мое": "твое",
    "мои": "твои",
    "моего": "твоего",
    "моей": "твоей",
    "моему": "твоему",
    "моим": "твоим",
    "моих": "твоих",
    "мою": "твою",
    "моём": "твоём",
    "моем": "твоем",
    "моими": "твоими",
}
_RU_WORD = re.compile(r"[а-яёА-ЯЁ]+(?:-[а-яёА-ЯЁ]+)?")
# "-ую" is left out: "рисую" is a verb, "новую" an adjective
_RU_PRESENT = re.compile(r"(?<=[а-яё]{2})(аю|яю|ею)(сь)?$")
_RU_IRREGULAR = re.compile(r"(ем|дам)$")  # "я не ем", "я продам": есть, дать
_RU_FIRST_PRESENT = re.compile(r"[а-яё]{2}(у|ю)(сь)?$")
# before a noun in -у/-ю ("в детском саду", "на работу"): a preposition, or an adjective's ending
_RU_PREPOSITIONS = frozenset(
    ("в", "во", "на", "по", "за", "про", "через", "под", "к", "ко", "у", "о", "об", "при", "с")
    + ("со", "из", "от", "до")
)
_RU_ADJECTIVE = re.compile(r"(ом|ем|ую|юю|ого|его|ому|ему)$")  # "-ой" is a noun's too: "зимой"


def _addressed_ru(text: str) -> str | None:
    """A Russian ``text`` in the owner's voice said to the owner ("Я работаю логопедом в детском
    саду." → "Ты работаешь логопедом в детском саду."), or None when a verb's form would be a
    guess: a word that may be a first person verb ("-у", "-ю", "-усь") that is not a regular
    verb right after "я" (or one word later: "я тоже играю"), and not a noun after a
    preposition or an adjective ("живу в Химках", "лечусь", "Я очень люблю")."""
    out: list[str] = []
    at = 0
    since_ya = -1  # words since "я" (-1: none yet)
    prev = ""
    for m in _RU_WORD.finditer(text):
        word = m.group(0)
        low = word.lower()
        new = _TO_SECOND_RU.get(low)
        if new is None and _RU_FIRST_PRESENT.search(low):
            verb = _RU_PRESENT.search(low)
            if verb and since_ya in (0, 1):
                new = (
                    low[: verb.start()] + verb.group(1)[0] + "ешь" + ("ся" if verb.group(2) else "")
                )
            elif not (prev in _RU_PREPOSITIONS or _RU_ADJECTIVE.search(prev)):
                return None
        elif since_ya in (0, 1) and _RU_IRREGULAR.search(low):
            return None
        since_ya = 0 if low == "я" else since_ya + 1 if since_ya >= 0 else -1
        prev = low
        if new is None:
            continue
        if word[0].isupper():
            new = new[0].upper() + new[1:]
        out.append(text[at : m.start()] + new)
        at = m.end()
    out.append(text[at:])
    return "".join(out)


def addressed(text: str) -> str | None:
    """A ``text`` in the owner's voice (:func:`speaks_as_owner`) said to the owner: "Hibs are my
    team, I've had a season ticket…" → "Hibs are your team, you've had a season ticket…", "Я
    работаю логопедом в детском саду." → "Ты работаешь логопедом в детском саду.". An opening
    that reports Eva's memory stays hers ("I remember that I…" → "I remember that you…"). None
    for any other text (not in the first person, or a Russian verb whose form would be a guess:
    :func:`_addressed_ru`)."""
    if not speaks_as_owner(text):
        return None
    if _CYRILLIC.search(text):
        report = _REPORTS.match(text.strip())
        head = report.group(0) if report else ""
        turned = _addressed_ru(text.strip()[len(head) :])
        return None if turned is None else head + turned
    text = text.strip()
    report = _REPORTS.match(text)
    out: list[str] = []
    at = report.end() if report else 0
    out.append(text[:at])
    prev = ""
    for m in _EN_WORD.finditer(text, at):
        word = m.group(0)
        low = word.lower().replace("\u2019", "'")
        new = _TO_SECOND.get(low) or (_AGREEING.get(low) if prev == "i" else None)
        prev = low
        if new is None:
            continue
        if "\u2019" in word:
            new = new.replace("'", "\u2019")
        before = text[: m.start()].rstrip()
        if not before or before[-1] in '.!?"«“':
            new = new[0].upper() + new[1:]  # the start of a sentence
        out.append(text[at : m.start()] + new)
        at = m.end()
    out.append(text[at:])
    return "".join(out)


def only_shown_words(text: str, support: str) -> bool:
    """Every meaningful word of ``text`` is one the turn was shown (in either script): the
    owner's words given back, nothing of the model's own ("I don't have any children." holds
    "children", which nothing shown did — in the owner's voice, an invention)."""
    mine = set(stems(text))
    return bool(mine) and mine <= _support_stems(support)


def _support_stems(support: str) -> set[str]:
    other = " ".join(transliterate(w) for w in support.lower().split())
    return set(stems(support)) | set(stems(other))


_ENGLISH_MONTHS = (
    r"january|february|march|april|may|june|july|august|september|october|november|december"
)
_MONTH_WORDS = (
    rf"({_ENGLISH_MONTHS}|январ\w*|феврал\w*|март\w*|апрел\w*|ма[йяе]\w*|июн\w*|"
    r"июл\w*|август\w*|сентябр\w*|октябр\w*|ноябр\w*|декабр\w*)"
)
_DAY_OF = re.compile(
    r"\b([0-3]?\d)(?:st|nd|rd|th|-?го|-?е)?\s+(?:of\s+)?"
    + _MONTH_WORDS
    + r"|"
    + _MONTH_WORDS
    + r"\s+([0-3]?\d)(?:st|nd|rd|th)?\b",
    re.IGNORECASE,
)


def _days_of_shown_months(
    text: str, support: str, months: frozenset[int] | None = None
) -> set[str]:
    """Day numbers ``text`` gives with a month the support names ("on 7 May" when a line is
    dated "8 May 2023" and says "yesterday"): a date worked out from a dated memory, not made
    up (measured on LoCoMo: "When did Caroline go to the support group?" was refused)."""
    if months is None:
        months = shown_calendar(support).months
    out = set()
    for m in _DAY_OF.finditer(text):
        day, month = (m.group(1), m.group(2)) if m.group(1) else (m.group(4), m.group(3))
        if month and timeframe.month_number(month) in months:
            out.add(day)
    return out


# the number of a list item at the start of a line (measured on the default model: "В Грузию
# вы можете взять следующие вещи:\n\n1." — a packing list for "Что мне взять с собой в
# Грузию?" — was judged invented for its "1"); a line of its own after another line, never the
# reply's start: "25." alone, the default model's answer to "Сколько мне лет?" when memory held no
# age, is an age, and was shown as one
_LIST_MARK = re.compile(r"(?<=\n)[ \t]*\d{1,2}[.)](?=\s|$)")


# an acronym of the support ("US", "МГУ"), and a run of capitalised words in a reply that may spell
# it out ("United States", "United States of America")
_ACRONYM = re.compile(r"\b[A-ZА-ЯЁ]{2,6}\b")
_CAPITALISED_RUN = re.compile(r"[A-ZА-ЯЁ][\w'’-]*(?:\s+(?:(?:of|and|the|и)\s+)?[A-ZА-ЯЁ][\w'’-]*)+")


def _spelled_out(text: str, support: str) -> set[str]:
    """The stems of the words of ``text`` that spell out an acronym the support holds: the
    owner's "a trip to the US in May" answered "You are going to the United States in May." was
    judged to name two places nothing shown holds (seen in an owner session: "Where are we going
    in May?" got "I don't know")."""
    acronyms = set(_ACRONYM.findall(support))
    out: set[str] = set()
    if not acronyms:
        return out
    for m in _CAPITALISED_RUN.finditer(text):
        words = [w for w in m.group().split() if w[0].isupper() and w.lower() != "the"]
        if "".join(w[0] for w in words) in acronyms:
            out.update(stem_token(w.lower()) for w in words)
    return out


def unsupported(text: str, support: str) -> list[str]:
    """The numbers and names ``text`` states that ``support`` (what the turn was shown: memory,
    summaries, the owner's messages) does not hold — a name in either script. A day of a month
    the support names is not counted (:func:`_days_of_shown_months`), nor the words that spell
    out an acronym it holds (:func:`_spelled_out`)."""
    text = _LIST_MARK.sub(" ", text)  # "1." opening a list item states nothing
    calendar = shown_calendar(support)
    days = _days_of_shown_months(text, support, calendar.months)
    worked_out = days | _worded(support) | _years_around(support)
    # the day a line was said ("30 May 2026 Wife is Sunita…") is a day, not any number: it
    # stands for "on 30 May" (days of shown months, above), never for "Sunita is 30 years old."
    # (measured on bench.owner_questions, dev and test, default model: 9 ages nobody told —
    # "How old is Tyler?" → "Tyler is 29 years old." — were shown on a line's day)
    stated = numbers(_LINE_DAY_NUMBER.sub("", support))
    out = sorted(n for n in numbers(text) - stated if re.sub(r"\D", "", n) not in worked_out)
    known = _support_stems(support) | _spelled_out(text, support)
    sounds: dict[bool, set[str]] | None = None
    for word, group in name_words(text):
        if group & known or calendar.holds(word):
            continue
        if sounds is None:  # read once, and only when a name is not found by its stem
            sounds = _sound_keys(support)
        # a name the support holds in the other script, spelled as it sounds ("Norway" for
        # "Норвегии", whose stems do not meet letter by letter)
        if sound_key(word) not in sounds[not _CYRILLIC.search(word)]:
            out.append(min(group))
    return out


# the day number of a line's "said on" day (core.memory.prompt_section.said_text)
_LINE_DAY_NUMBER = re.compile(r"^\d{1,2}(?= [A-Z][a-z]{2} \d{4} )", re.MULTILINE)
_YEAR = re.compile(r"\b(?:19|20)\d\d\b")
_LAST_YEAR = re.compile(r"\blast year\b|\bв прошлом году\b|\bпрошлого года\b", re.I)
_NEXT_YEAR = re.compile(r"\bnext year\b|\bв следующем году\b|\bследующего года\b", re.I)


def _years_around(support: str) -> set[str]:
    """The years worked out from a dated line that says "last year" or "next year" ("2022" from
    "15 May 2023 I painted that sunrise last year"): a number the support states in other
    words, not one made up (LoCoMo dev, the gold answers as replies: 5 of 760 held so)."""
    out: set[str] = set()
    for line in support.splitlines():
        years = [int(y) for y in _YEAR.findall(line)]
        if _LAST_YEAR.search(line):
            out.update(str(y - 1) for y in years)
        if _NEXT_YEAR.search(line):
            out.update(str(y + 1) for y in years)
    return out


class Calendar(NamedTuple):
    """The months (1..12) and weekdays (0 Monday … 6 Sunday) a support names, in either
    language."""

    months: frozenset[int]
    weekdays: frozenset[int]

    def holds(self, word: str) -> bool:
        """``word`` names a month or a weekday the support names, in either language."""
        low = word.lower()
        return timeframe.month_number(low) in self.months or (
            timeframe.weekday_number(low) in self.weekdays
        )


_LETTERS = re.compile(r"[^\W\d_]+")


def shown_calendar(support: str) -> Calendar:
    """The months and weekdays the support names, whatever its language or form: a memory
    line's day is written short ("27 Aug 2023", :func:`core.memory.prompt_section.said_on`), so
    "on 27 August" worked out from it is no name made up (LoCoMo dev, the 760 gold answers with
    evidence as replies, dated evidence lines and 15 other turns as the support: 33 were held as
    made up for such a month); and the owner who says "Свадьбу перенесли: теперь она в октябре"
    is answered "Your wedding is in October." — held as made up, in English, for its month, so
    the owner was told there was nothing in her memory (bench.companion, unseen scenario c)."""
    months: set[int] = set()
    weekdays: set[int] = set()
    for word in set(_LETTERS.findall(support.lower())):
        month, day = _calendar_word(word)
        if month is not None:
            months.add(month)
        if day is not None:
            weekdays.add(day)
    return Calendar(frozenset(months), frozenset(weekdays))


@functools.lru_cache(maxsize=8192)
def _calendar_word(word: str) -> tuple[int | None, int | None]:
    """The month and the weekday a lower-case word names (either may be None), read once per
    word: the support of a turn is read again for every sentence judged."""
    return timeframe.month_number(word), timeframe.weekday_number(word)


def _sound_keys(support: str) -> dict[bool, set[str]]:
    """The :func:`~core.text.sound_key` of every word of four letters or more the support
    holds, by script (True: Cyrillic)."""
    out: dict[bool, set[str]] = {True: set(), False: set()}
    for w in re.findall(r"[^\W\d_]{4,}", support):
        out[bool(_CYRILLIC.search(w))].add(sound_key(w))
    return out


# A role that covers others: a question about the owner's children is answered by a line about a
# son or a daughter.
_ROLE_COVERS = {"child": frozenset({"son", "daughter"})}
# the owner's own: "my brother", "мою старшую сестру", "у меня дети", "our son", "нашего сына"
# (closed word classes)
_MINE = frozenset(w for w in _FIRST_PERSON if w.startswith("мо") or w in ("my", "mine")) | {
    w for w in _OURS if w.startswith("наш") or w in ("our", "ours")
}


def _owners_roles(question: str) -> set[str]:
    """The roles a question names as the owner's own: a role word with "my" (or "у меня")
    among the two words before it. Someone else's ("Melanie's son") is not the owner's: on
    LoCoMo such a role is often missing from the very lines that answer the question."""
    out = set()
    for name, rx in ROLES:
        for m in rx.finditer(question):
            before = [w.strip(".,!?:;«»\"'") for w in question[: m.start()].lower().split()[-3:]]
            pairs = list(zip(before, before[1:], strict=False))
            if _MINE & set(before[-2:]) or ("у", "меня") in pairs or ("у", "нас") in pairs:
                out.add(name)
    return out | bare_kin(question)


def missing_roles(question: str, support: str) -> list[str]:
    """The owner's people a question asks about by role ("What is my brother's name?", "Как
    зовут мою маму?") whom nothing else the turn was shown names by that role, in either
    language. Measured on unseen scenarios: with no brother and no mother in memory, the default
    model answered with the husband's and the wife's names — names the support holds, so
    :func:`unsupported` let them pass. Roles and possessives are closed classes of words
    (:data:`core.sleep.candidates.ROLES`), not a list of facts."""
    asked = _owners_roles(question)
    if not asked:
        return []
    return sorted(asked - _named_roles(support.replace(question, " ")))


def misattributed(text: str, support: str, question: str, said: str = "") -> list[str]:
    """The names ``text`` gives for someone the ``question`` asks about by role (the owner's
    or another's: "Liza's husband") that a line of the support gives to someone else by role,
    and no line to the role asked about: asked "Как зовут мою маму?" with the mother in memory
    but not her name, the default model answered "Ваша мама Alesya." — the wife's name ("My wife Alesya is from
    Minsk"). A line that holds the name with no role ("Alesya translates for the courts here.",
    or the owner's own "What does Alesya do?") says nothing either way: it no longer frees a
    name another line gives someone else. A name only such lines hold stays free.

    ``said``: Eva's own earlier replies in the chat. They are no support for a claim (they may
    hold her own inventions), but a role they gave a name tells whose name it is: on the same
    scenario the wife's record was not recalled for the mother's question, Eva's earlier "Ваша
    жена Alesya…" was in the window, and the model took the name from there. Seen on another
    unseen scenario: "What's Liza's husband called?" with no husband in memory got "Liza's
    husband is Matvey." — the owner's boyfriend ("Мой парень Матвей — курьер")."""
    asked = set(roles(question))
    if not asked:
        return []
    shown = f"{support.replace(question, ' ')}\n{said}"
    # each line's stems and the roles it names, read once for every name of the reply
    lines = [
        (_support_stems(line), _sound_keys(line), _named_roles(line)) for line in shown.splitlines()
    ]
    out = []
    given = name_words(text)
    # a bare answer's name too ("Matvey." for "What's Liza's husband called?", scenario e)
    groups = {g for _, g in given}
    given += [(w, g) for w in _bare_words(text, question) if (g := name_group(w)) not in groups]
    for word, group in given:
        # a line holds the name by its stem, or in the other script as it sounds ("Matvay" for
        # "Матвей", as :func:`unsupported` reads it: seen on scenario e, "Liza's husband is
        # Matvay." — the owner's boyfriend)
        key, cyrillic = sound_key(word), bool(_CYRILLIC.search(word))
        held_with = [
            named for stems, keys, named in lines if group & stems or key in keys[not cyrillic]
        ]
        # some line gives it a role, and none the role asked about
        if any(held_with) and not any(named & asked for named in held_with):
            out.append(min(group))
    return out


# a line that says who the owner is ("The owner's name is Caroline.", "Хозяйку зовут Полина.")
_OWNER_NAMED = re.compile(
    r"\bowner(?:'s|’s)?\s+(?:name\s+)?is\b|\bowner\s+is\s+called\b|\bis\s+the\s+owner\b"
    r"|\bхозя\w*\s+зовут\b|\bзовут\s+хозя|\bхозя\w*\s+[—–-]\s",
    re.I,
)


def _names_the_owner(line: str, people: list[frozenset[str]]) -> bool:
    """``line`` says that one of ``people`` is the owner: "The owner's name is Caroline.", or
    the owner's own introduction ("Я Полина, мне 29")."""
    if _OWNER_NAMED.search(line):
        return True
    own = self_name(line)
    return own is not None and any(set(stems(own)) & g for g in people)


# a line that opens on a speaker's name: "Melanie: I went camping…" is Melanie's first person
_SPEAKER = re.compile(r"^(?:\d{1,2} [A-Z][a-z]{2} \d{4} )?([^\W\d_][\w'’ -]{0,40}):\s")


def _owners_own(line: str, owner: list[frozenset[str]]) -> bool:
    """A memory line in the owner's own first person: it holds the first person singular, and
    no speaker label naming someone else opens it."""
    if not _words(line) & _FIRST_PERSON:
        return False
    label = _SPEAKER.match(line)
    return label is None or any(set(stems(label.group(1))) & g for g in owner)


def misnumbered(text: str, support: str, question: str) -> list[str]:
    """The numbers ``text`` gives about someone the ``question`` names (by name, or by role:
    "How old is Matvey?", "Сколько лет моему сыну?") that only lines about others hold. Seen on
    an unseen scenario once the owner's introduction was core, in every prompt: "Сколько лет
    Матвею?" (nobody said) got "Матвей 29 лет." — 29 is the owner's age, from "Я Полина, мне 29".
    :func:`unsupported` lets such a number pass: the support holds it, on someone else's line.

    A line about the person holds their name or a longer form of it ("Melanie" for "Mel"), the
    role asked about, a name a line of that role gives (the son's "Марк" for "my son"), or a role
    a line gives their name. A day of a month the support names is a date worked out, not a
    number of theirs (:func:`_days_of_shown_months`). A question that names nobody the support
    holds is left to the other signs. Measured on LoCoMo's 760 dev questions with evidence, the
    gold answer as the reply and the evidence plus 15 other turns of the conversation as the
    support: 0 flagged."""
    rest = support.replace(question, " ")
    lines = [line for line in rest.splitlines() if line.strip()]
    line_stems = [_support_stems(line) for line in lines]

    def holds(i: int, group: frozenset[str]) -> bool:
        return bool(group & line_stems[i]) or any(
            len(g) >= 3 and w.startswith(g) for g in group for w in line_stems[i]
        )

    people = [g for g in name_stems(question) if any(holds(i, g) for i in range(len(lines)))]
    asked = _named_roles(question)
    if asked:  # the names the lines of that role give
        for line in lines:
            if _named_roles(line) & asked:
                people += name_stems(line)
    if not people and not asked:
        return []
    mentions = [i for i in range(len(lines)) if any(holds(i, g) for g in people)]
    if any(_names_the_owner(lines[i], people) for i in mentions):
        # the person asked about is the owner ("The owner's name is Caroline."): the owner's
        # own lines, in the first person, are about them ("How long ago was Caroline's 18th
        # birthday?" — "A friend made it for my 18th birthday ten years ago.")
        mentions += [
            i for i, line in enumerate(lines) if i not in mentions and _owners_own(line, people)
        ]
    # the roles the named person's lines give them: "Марк — мой сын" makes the son's lines theirs
    asked |= {r for i in mentions for r in _named_roles(lines[i])}
    about = set(mentions) | {i for i, line in enumerate(lines) if _named_roles(line) & asked}
    if not about:
        return []  # nothing shown is about them: missing_roles and unsupported speak
    theirs = set().union(*(numbers(lines[i]) for i in about))
    days = _days_of_shown_months(text, rest)
    return sorted(
        n
        for n in numbers(text) & numbers(rest)
        if n not in theirs and re.sub(r"\D", "", n) not in days
    )


# A number said in words, in an answer to a question asking how old someone is
# (scenario e, default model: "Сколько лет Матвею?", nobody said, got "Два года." and it passed:
# the number checks read digits). Closed word classes: the numbers from two to twenty and the
# tens, in both languages and the Russian cases; "one" is left out ("one of my friends").
_ASKS_AGE = re.compile(
    r"\bhow old\b|\bwhat age\b|\bскольк\w*\s+(\w+\s+)?(лет|годик)|\bвозраст", re.I
)
_NUMBER_WORDS = {
    v: n
    for n, forms in (
        (2, "two два две двух двум двумя"),
        (3, "three три трёх трех трём трем тремя"),
        (4, "four четыре четырёх четырех четырём четырем четырьмя"),
        (5, "five пять пяти пятью"),
        (6, "six шесть шести шестью"),
        (7, "seven семь семи семью"),
        (8, "eight восемь восьми восемью"),
        (9, "nine девять девяти девятью"),
        (10, "ten десять десяти десятью"),
        (11, "eleven одиннадцать одиннадцати"),
        (12, "twelve двенадцать двенадцати"),
        (13, "thirteen тринадцать тринадцати"),
        (14, "fourteen четырнадцать четырнадцати"),
        (15, "fifteen пятнадцать пятнадцати"),
        (16, "sixteen шестнадцать шестнадцати"),
        (17, "seventeen семнадцать семнадцати"),
        (18, "eighteen восемнадцать восемнадцати"),
        (19, "nineteen девятнадцать девятнадцати"),
        (20, "twenty двадцать двадцати"),
        (30, "thirty тридцать тридцати"),
        (40, "forty сорок сорока"),
        (50, "fifty пятьдесят пятидесяти"),
        (60, "sixty шестьдесят шестидесяти"),
        (70, "seventy семьдесят семидесяти"),
        (80, "eighty восемьдесят восьмидесяти"),
        (90, "ninety девяносто девяноста"),
    )
    for v in forms.split()
}


def _said_numbers(text: str) -> set[str]:
    """The numbers of ``text``, in digits or in words (:data:`_NUMBER_WORDS`), as digits."""
    out = {re.sub(r"\D", "", n) for n in numbers(text)}
    return (out | _worded(text)) - {""}


def _worded(text: str) -> set[str]:
    """The numbers ``text`` says in words, a ten and a unit read as one ("двадцать девять")."""
    words = re.findall(r"[^\W\d_]+", text.lower().replace("ё", "е"))
    values = [_NUMBER_WORDS.get(w) for w in words]
    out: set[str] = set()
    i = 0
    while i < len(values):
        v = values[i]
        if v is not None:
            nxt = values[i + 1] if i + 1 < len(values) else None
            if v >= 20 and nxt is not None and nxt < 10:
                v, i = v + nxt, i + 1
            out.add(str(v))
        i += 1
    return out


def worded_numbers(text: str, support: str, question: str) -> list[str]:
    """The numbers a reply to a "how old" question says in words that nothing shown holds, in
    digits or in words. Only ages: on LoCoMo dev, 12 of 34 gold answers to "how many / how
    long" questions are counted or worked out over several turns ("How many hikes has Joanna
    been on?" → "Four"), no line states them."""
    if not _ASKS_AGE.search(question):
        return []
    return sorted(_worded(text) - _said_numbers(support))


# a question asking what someone or something is called (closed words of both languages)
_ASKS_NAME = re.compile(r"\bnamed?\b|\bcalled\b|зовут|\bимя\b|\bимени\b|кличк|называ", re.I)
_BARE = re.compile(r"^[\W_]*((?:[A-ZА-ЯЁ][\w'’-]*\s*){1,3})[.!…]*\s*$")


def bare_names(text: str, question: str) -> list[frozenset[str]]:
    """The name a bare answer to "what is … called?" gives: a first sentence of one to three
    capitalised words ("Алексей.", "Anna Petrova."), which :func:`core.text.names` never reads
    (a sentence's first word may be any word). Seen on an unseen scenario (default model):
    "Как зовут мою жену и откуда она?" with no wife in memory got "Алексей" — passed as naming
    nothing."""
    return [name_group(w) for w in _bare_words(text, question)]


def _bare_words(text: str, question: str) -> list[str]:
    """The words of a bare answer to a name question (:func:`bare_names`)."""
    if not _ASKS_NAME.search(question):
        return []
    m = _BARE.match(text)
    if not m:
        return []
    words = [w for w in m.group(1).split() if not is_stopword(w.lower())]
    return [w for w in words if w.lower() not in NOT_NAMES]


def _bare_claims(text: str, support: str, question: str) -> list[str]:
    """The names of a bare answer (:func:`bare_names`) nothing shown holds. The question's own
    words are no name ("Как зовут нашего хорька?" → "Хорька Shnurok." names Shnurok), unless they
    are all the answer has: "Как зовут мою маму?" → "Мама" (scenario d) names no one."""
    groups = bare_names(text, question)
    asked = _support_stems(question)
    given = [g for g in groups if not g & asked]
    if not given:
        return [min(g) for g in groups]
    known = _support_stems(support)
    return [min(g) for g in given if not g & known]


def _named_roles(text: str) -> set[str]:
    """The roles ``text`` names, with the roles they cover (a son names a child)."""
    named = set(roles(text))
    return named | {role for role, parts in _ROLE_COVERS.items() if named & parts}


# a reply that opens on "you" and a verb ("Ты работаешь на севере вахтами…"), and a line of the
# support whose subject is someone of the owner's by role, with the same verb right after ("Муж у
# меня работает на севере вахтами…"); the line may open with its day, a possessive and "у меня"
_YOU_VERB = re.compile(r"^\W*(?:ты|вы|you)\s+([^\W\d_]+)", re.IGNORECASE)
_LINE_DAY = re.compile(r"^\d{1,2} [A-Z][a-z]{2} \d{4} ")
_LINE_OPENING = re.compile(
    r"^(?:(?:my|our|мой|моя|моё|мое|мои|наш|наша|наше|наши)\s+)?(\w+)"
    r"(?:\s+(?:у меня|у нас|of mine))?\s+([^\W\d_]+)",
    re.IGNORECASE,
)


_OWNER_TOO = frozenset({"i", "i'm", "me", "я", "мне", "меня", "мной"})


def _same_verb(a: str, b: str) -> bool:
    sa, sb = stem_token(a.lower().replace("ё", "е")), stem_token(b.lower().replace("ё", "е"))
    n = len(os.path.commonprefix([sa, sb]))
    return n >= 3 and n >= min(4, len(sa), len(sb))


def someone_elses_life(text: str, support: str, question: str) -> list[str]:
    """The roles whose line a reply to a question about the owner alone retells as the owner's:
    asked "Кем я работаю?", the default model answered "Ты работаешь на севере вахтами…" from
    "Муж у меня работает на севере вахтами…" (bench.owner_profile dev: 3 of 60 answers). The
    reply opens on "you" and a verb and names no role; a line of the support opens on a role
    (:data:`~core.sleep.candidates.ROLES`) followed by the same verb. Closed word classes, not
    a list of facts."""
    if roles(question) or _ours_in(question) or not _words(question) & _FIRST_PERSON:
        return []
    m = _YOU_VERB.match(text)
    if m is None or roles(text):
        return []
    verb = m.group(1)
    out = []
    for line in support.splitlines():
        said = _LINE_DAY.sub("", line.strip())
        opening = _LINE_OPENING.match(said)
        if opening is None or not _same_verb(verb, opening.group(2)):
            continue
        if _words(said[opening.end() :]) & _OWNER_TOO:
            continue  # the owner is in the line too ("My son studies at school, I study at uni")
        out += [name for name, rx in ROLES if rx.fullmatch(opening.group(1))]
    return sorted(set(out))


# A what / which / who / where question (its first three words): what the answer names should
# be found in what the turn was shown. When, how many and how long are numbers and dates
# (:func:`unsupported`); yes / no questions and questions offering a choice ("or") answer with
# the question's own words.
_WHAT = re.compile(
    r"^[\W_]*(?:[\w'’-]+[\W_]+){0,2}?"
    r"(what|which|who|whom|whose|where|что|чем|чём|кто|кого|кем|кому|где|куда|откуда|"
    r"как\w+|кака\w+|каки\w+|како\w+)\b",
    re.IGNORECASE,
)
# the stems of days, months and spans of time: a date worked out from dated lines ("the Sunday
# before 25 May") is not a thing named
_CALENDAR = re.compile(
    r"^(januar|februar|march|april|may|june|juli|august|septemb|octob|novemb|decemb|monday|"
    r"tuesday|wednesday|thursday|friday|saturday|sunday|year|month|week|day|today|tomorrow|"
    r"yesterday|ago|befor|after|last|next|январ|феврал|март|апрел|ма[йяе]|июн|июл|август|"
    r"сентябр|октябр|ноябр|декабр|понедельник|вторник|сред|четверг|пятниц|суббот|воскресен|"
    r"год|лет|месяц|недел|ден|дня|сегодн|завтр|вчер|назад|после|прошл|следующ)"
)
_PERSONAL_STEMS = frozenset(s for w in PERSONAL for s in stems(w))
# words about the talk itself, not about the owner's life ("Noted, I'll keep it in mind", "не
# помню", "you told me"): a closed class of saying, knowing and remembering
_TALK = re.compile(
    r"^(note|noted|keep|mind|rememb|memori|memory|know|knew|tell|told|say|said|ask|question|"
    r"answer|sure|okay|ok|hello|hi|hey|thank|помн|помин|памят|запомн|зна|сказ|говор|спрос|"
    r"вопрос|ответ|конечн|хорош|ладн|привет|здравств|спасиб)"
)


def nothing_shown(text: str, support: str, question: str) -> list[str]:
    """The words a reply to a what / which / who / where question about the owner answers with,
    when not one of them is anything the turn was shown: the words beyond the question's own,
    personal pronouns, numbers and the calendar (those are :func:`unsupported`'s). Seen on
    unseen scenarios with the default model, for questions nothing remembered answers: "What
    instrument am I learning?" → "piano", "Какой спорт у моего сына?" → "футбол" — common
    words, which the checks of names and numbers let through.

    Only where the words can be compared: the reply, the question and every line of the support
    in one script (a Russian memory answered in English is said in other words: "сварщик" is
    "welder"). Measured on LoCoMo dev, the gold answers to 759 questions with evidence as the
    reply, the evidence turns (with their photo captions) and 15 other turns as the support:
    read as sentences about what was asked, 24 flagged (3.2 %), 10 of them inferences the
    conversation never states ("Liberal", "Florida", "asthma" for "What would …'s political
    leaning likely be?"); as the bare words they are, 6."""
    if not _WHAT.match(question) or CHOICE.search(question):
        return []
    asked = set(stems(question))
    said = set(stems(text))
    if not said & (asked | _PERSONAL_STEMS):
        return []  # not an answer about what was asked ("Hello there"): the other checks' own
    new = {
        s
        for s in said - asked - _PERSONAL_STEMS
        if not any(ch.isdigit() for ch in s) and not _CALENDAR.match(s) and not _TALK.match(s)
    }
    if not new:
        return []
    rest = support.replace(question, " ")
    lang = script(text)
    if script(question) != lang or any(
        script(line) != lang for line in rest.splitlines() if re.search(r"[^\W\d_]{3}", line)
    ):
        return []
    if new & (_support_stems(rest) | _spelled_out(text, rest)):
        return []
    return sorted(new)


def made_up(
    text: str, support: str, question: str = "", said: str = "", asked: str = ""
) -> list[str] | None:
    """What a reply (its first sentence) to a question about the owner made up, or None when it
    invents nothing: it admits nothing and states unsupported numbers or names, answers about
    someone the ``question`` names by role whom nothing shown names (:func:`missing_roles`) or
    with a name the support gives someone else (:func:`misattributed`) — those are listed — or
    speaks of the owner's life as Eva's own (an empty list). ``said``: Eva's earlier replies in
    the chat, read only for whose a name is (:func:`misattributed`). ``asked``: the owner's
    earlier questions that only ask (:func:`core.language.only_asks`): no support, but whom they
    name by role exists ("When is Mum's party?" before "Как зовут мою маму?")."""
    if admits_not_knowing(text):
        return None
    claims = unsupported(text, support)
    if question:
        claims += _bare_claims(text, support, question)
        claims += missing_roles(question, f"{support}\n{asked}" if asked else support)
        claims += misattributed(text, support, question, said)
        claims += misnumbered(text, support, question)
        claims += someone_elses_life(text, support, question)
        claims += worded_numbers(text, support, question)
        claims += nothing_shown(text, support, question)
    return claims if claims or speaks_as_owner(text) else None


def invents(text: str, support: str, question: str = "") -> bool:
    """A reply (its first sentence) to a question about the owner invents (:func:`made_up`)."""
    return made_up(text, support, question) is not None


# Eva taking the owner's identity for her own in a reply to a statement: the owner's name or
# number right after "I'm" / "я" / "меня зовут" / "my name is", the owner's number after "мне",
# or one of the owner's names within three words after a first person possessive ("my wife Alesya", "моя дочь
# Лейла"). Seen on unseen scenarios with the default model, each shown to the owner: "Hello! I'm
# Callum, and I'm 44 years old. I work as a tram driver in Edinburgh." (for "Hi Eva, I'm Callum,
# 44, I drive trams in Edinburgh."), "Привет! Меня зовут Рустам. У меня есть свой автосервис в
# Казани.", "Добрый вечер! Геннадий Петрович, мне 67 лет, живет с женой Людмилой…" — the owner's
# words retold in Eva's voice, past the recital's character test (:meth:`ReplyJudge.recites`).
# Closed word classes and the owner's own names and numbers, not a list of facts.
_IDENTITY_BEFORE = frozenset({"i'm", "im", "я"})
_POSSESSIVES = frozenset(w for w in _FIRST_PERSON if w.startswith("мо") or w == "my") - {"мне"}
_CLAUSE = re.compile(r"[,.;:!?()\"«»“”]")


class OwnersMarks(NamedTuple):
    """What of the owner's message a reply may not claim as Eva's own (:func:`takes_owners_life`):
    its names (stems in both scripts, a first word included), numbers and stems."""

    names: list[frozenset[str]]
    numbers: frozenset[str]
    said: frozenset[str]


def owners_marks(message: str) -> OwnersMarks:
    """The marks of ``message``, read once for every piece of a streamed reply."""
    return OwnersMarks(name_stems("x " + message), numbers(message), frozenset(stems(message)))


def takes_owners_life(text: str, message: str | OwnersMarks) -> bool:
    """``text`` (a reply's start) speaks of the owner's identity as Eva's own: "I'm Callum",
    "мне 67 лет", "my wife Alesya" where the name or the number is one of ``message``'s."""
    names, nums, said = owners_marks(message) if isinstance(message, str) else message
    # an owner who writes in lower case ("name's priya, i'm a nurse") names no one; the reply's
    # own names ("I'm Priya") that are words of the message are the owner's too
    named = {v for g in name_stems(text) for v in g} & said

    def owners(tok: str) -> bool:
        s = stem_token(tok)
        return tok in nums or s in named or any(s in g for g in names)

    for clause in _CLAUSE.split(text.lower().replace("\u2019", "'")):
        toks = re.findall(r"[\w']+", clause)
        at = _identity_at(toks)
        if at is not None and any(owners(w) for w in toks[at + 1 :]):
            return True  # "I'm a Swedish cellist living in Vienna"
        for i, t in enumerate(toks):
            after = toks[i + 1 : i + 4]
            if _says_who(toks, i):
                nxt = after[1:2] if t == "i" else after[:1]
            elif (t == "зовут" and toks[i - 1 : i] == ["меня"]) or (
                t == "is" and toks[max(i - 2, 0) : i] == ["my", "name"]
            ):
                nxt = after[:1]
            elif t == "мне":
                nxt = [w for w in after[:1] if w in nums]
            elif t in _POSSESSIVES or (t == "меня" and toks[i - 1 : i] == ["у"]):
                # "my wife Alesya", "у меня есть лабрадор Джек"; the owner's own things too:
                # "у меня мигрени", "my migraines"
                if any(owners(w) or stem_token(w) in said for w in after if not is_stopword(w)):
                    return True
                continue
            else:
                continue
            if any(owners(w) for w in nxt):
                return True
    return False


_CLAIM_STARTS = _IDENTITY_BEFORE | _POSSESSIVES | {"i", "мне", "у", "меня", "зовут", "name"}


def _identity_at(toks: list[str]) -> int | None:
    """Where a clause's words say who Eva is ("i'm", "i am", "я"), when nothing in it speaks
    to the owner ("I'm glad you're here" is about the two of them)."""
    if set(toks) & _SECOND_PERSON:
        return None
    return next((i for i in range(len(toks)) if _says_who(toks, i)), None)


def _says_who(toks: list[str], i: int) -> bool:
    """The word at ``i`` opens a saying of who Eva is: "i'm", "я", or "i" before "am"."""
    return toks[i] in _IDENTITY_BEFORE or (toks[i] == "i" and toks[i + 1 : i + 2] == ["am"])


def claim_pending(text: str) -> bool:
    """The end of ``text`` (a reply still streaming) could be the start of such a claim: one of
    its words is among the last four of its last clause, and what it names is still to come; or
    the last clause says who Eva is and has not ended."""
    last = text[last_clause(text) :].lower().replace("\u2019", "'")
    toks = [t.rstrip("'") for t in re.findall(r"[\w']+", last)]  # "I'" of an "I'm" to come
    return bool(set(toks[-4:]) & _CLAIM_STARTS) or _identity_at(toks) is not None


def last_clause(text: str) -> int:
    """Where the last clause of ``text`` starts (after its last comma, stop or bracket)."""
    ends = [m.end() for m in _CLAUSE.finditer(text)]
    return ends[-1] if ends else 0


_SELF_NAMED = re.compile(
    r"(?:\bменя\s+зовут|\bя\s*[—–-]?|\bi'?m|\bi\s+am|\bmy\s+name\s+is|\bname'?s|\bcall\s+me)\s+"
    r"([A-ZА-ЯЁ][\w-]+)",
    re.IGNORECASE,
)
# cues that name the owner whatever the case of the name ("меня зовут кирилл", "name's priya"),
# and two word orders of Russian and English ("Меня Лёша зовут", "Marcus here")
_NAMED_AS = re.compile(
    r"(?:\bменя\s+зовут|\bзовут\s+меня|\bmy\s+name\s+is|\bname\s+is|\bname'?s)\s+"
    r"([^\W\d_][\w-]+)",
    re.IGNORECASE,
)
_NAMED_BETWEEN = re.compile(r"\bменя\s+([^\W\d_][\w-]+)\s+зовут", re.IGNORECASE)
_NAMED_HERE = re.compile(r"\b([A-Z][\w-]+)\s+here\b")
# a possessive before "name's" / "name is" that makes the name someone else's: "Her name's Coco"
# (a puppy, the one hit over LoCoMo's 2760 dev turns before this rule)
_OTHERS_NAME = re.compile(r"\b(?:her|his|its|their|your|our|[\w-]+'s)\s+$", re.IGNORECASE)


def self_name(message: str) -> str | None:
    """The name the owner gives themself in ``message`` ("Я Тимур", "меня зовут Оксана",
    "I'm Callum", "my name is Priya", "меня Катя зовут", "Marcus here"), capitalised. After
    "я" / "I'm" the name must be written as one (capitalised: "I'm Tired" is no name); after
    "меня зовут" / "my name is" the cue is enough. Measured on the memory-step set: 47 of its 51
    introductions, and 1 of its 565 other messages ("Please call me Kate, not Katherine" — the
    owner's name all the same); on LoCoMo's 2760 dev turns, none."""
    found = set(names("x " + message))
    text = message.replace("\u2019", "'")
    hits = [
        (m.start(), m.group(1))
        for rx, cased in (
            (_SELF_NAMED, True),
            (_NAMED_AS, False),
            (_NAMED_BETWEEN, False),
            (_NAMED_HERE, True),
        )
        for m in rx.finditer(text)
        if (m.group(1) in found if cased else not is_stopword(m.group(1).lower()))
        and not _OTHERS_NAME.search(text[: m.start()])
    ]
    if not hits:
        return None
    name = min(hits)[1]
    return name[0].upper() + name[1:]
