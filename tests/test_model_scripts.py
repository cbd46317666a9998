"""Issue 26: which tokens a generation may not write (models.scripts), without a model."""

import numpy as np

from models.scripts import ScriptGuard, is_east_asian_piece


def test_east_asian_script_is_told_from_every_script_eva_speaks():
    for text in ("生", "活", "あ", "カ", "한", "。"):
        assert is_east_asian_piece(text.encode()), text
    for text in ("жизнь", "life", "«Ёж»", "— …", "№ 5", "😊", "é", "’"):
        assert not is_east_asian_piece(text.encode()), text
    # a byte-level token may hold only the start of a character
    assert is_east_asian_piece("生".encode()[:1])
    assert not is_east_asian_piece("生".encode()[1:])


def test_the_guard_forbids_east_asian_tokens_unless_the_prompt_holds_them():
    vocab = [b"a", "ж".encode(), "生".encode(), "生".encode()[:2], b" the", "한".encode()]
    guard = ScriptGuard(lambda i: vocab[i], len(vocab))
    forbid = guard.processor([0, 1, 4])
    assert forbid is not None
    scores = forbid(None, np.zeros(len(vocab), dtype=np.float32))
    assert list(np.isneginf(scores)) == [False, False, True, True, False, True]
    assert guard.processor([0, 2]) is None  # the owner wrote 生
