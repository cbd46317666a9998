"""Whether a memory is private (SPEC §2: "Body, health, money, location, documents … Set by the
model or the owner"), read from its words.

The memory step's model sets ``private`` itself, and the owner's own "it's a secret" sets it
(:func:`core.chat.owner_message.says_secret`). Neither was enough: on an unseen scenario "Between
you and me, I owe about twelve thousand pounds on credit cards…" was saved public — the model
left the flag false and the secret words were not among the stems — so that record would have
been shown to any group Eva talks in. A leak is the worst bug Eva can have, so the flag gets a
third, measured source: a logistic regression over the saved text's USE multilingual vector
(the embedder the app already runs), scored whole and sentence by sentence (the highest
counts), trained on the dev split of the labelled memory-step set
(``bench/train_sensitivity.py``; its ``private`` labels), with its threshold set for recall:
marking a harmless record private only hides it from other audiences, missing one leaks it.

Any of the three marks the record private; none can unmark it. Without USE vectors only the
model and the owner's words decide.

    sensitive("I owe twelve thousand on credit cards", use_vectors(embedder))   # True
"""

from __future__ import annotations

import functools
from pathlib import Path

from core.learned import Embed, Thresholded

MODEL_FILE = Path(__file__).with_name("sensitivity.json")


class SensitivityModel(Thresholded):
    def private(self, content: str, embed: Embed) -> bool | None:
        """Whether ``content`` must be private, or None when no USE vector can be had."""
        return self.above(content, embed)


@functools.cache
def sensitivity_model() -> SensitivityModel | None:
    """The trained model, loaded once."""
    return SensitivityModel.load(MODEL_FILE)


def sensitive(content: str, embed: Embed | None) -> bool:
    """True when the trained model marks ``content`` private; False when it does not, or
    cannot (no model file, no USE vectors: the model's flag and the owner's words decide)."""
    model = sensitivity_model()
    if model is None or embed is None:
        return False
    return bool(model.private(content, embed))
