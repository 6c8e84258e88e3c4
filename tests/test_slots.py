"""The continuous batch's slot cache (engine/slots.py) held to each row decoded alone on a
DecodingSession (the reference), through joins into free slots, leaves, rewinds written back and
grown buffers; and what it copies: never another row's cache, except when its buffers grow."""
from __future__ import annotations

import torch
from test_batch_rows import _rows
from tiny import tiny_ewe

from ewe.engine.session import COPIES, cache_bytes
from ewe.engine.slots import SlotSession

ATOL = 1e-4  # float32: the batch attends over masked positions, alone over exact ones


def _setup():
    ewe = tiny_ewe()
    ids, states = _rows(ewe)
    return ewe, ids, ewe.runtime.session(None, ewe.config.memory.context_offset()), states


class Alone:
    """A row decoded on a one-row DecodingSession of its own: what its slot must match."""

    def __init__(self, template, ids, state):
        self.session = template.fresh(state)
        self.logits = self.session.prefill(torch.tensor([ids]))

    def step(self, token: int) -> torch.Tensor:
        self.logits = self.session.step(torch.tensor([token]))
        return self.logits


def _join(slots: SlotSession, template, ids, state) -> tuple[Alone, torch.Tensor]:
    part = template.fresh(state)
    logits = part.prefill(torch.tensor([ids]))
    slots.add_row(part)
    return Alone(template, ids, state), logits


def _step(slots: SlotSession, rows: list[Alone], tokens: list[int]) -> None:
    batch = slots.step(torch.tensor(tokens))
    for i, (row, token) in enumerate(zip(rows, tokens)):
        torch.testing.assert_close(batch[i], row.step(token)[0], atol=ATOL, rtol=0)


def test_rows_joining_leaving_and_rewinding_in_slots_decode_as_alone_and_copy_no_other_row():
    ewe, ids, template, states = _setup()
    slots = SlotSession(template, 2)
    rows = []
    for i in range(3):
        row, logits = _join(slots, template, ids[i], states[i])
        torch.testing.assert_close(logits, row.logits, atol=ATOL, rtol=0)
        rows.append(row)
    COPIES.reset()
    for t in range(4):
        _step(slots, rows, [7 + t, 11 + 2 * t, 13])
    slots.select_rows([0, 2])  # the second row leaves: its slot (1) is free, nothing is copied
    rows = [rows[0], rows[2]]
    assert slots.order == [0, 2] and COPIES.other_rows == COPIES.moved == 0
    row, _ = _join(slots, template, ids[3], states[3])  # takes the lowest free slot
    rows.append(row)
    assert slots.order == [0, 2, 1]
    _step(slots, rows, [9, 10, 12])  # no free slot below a row in use: nothing moves
    assert COPIES.moved == 0
    slots.select_rows([1, 2])  # the first row leaves and no row joins: at the step the row of the highest
    rows = rows[1:]            # slot (2) moves down into the free one (0), so the step attends over no free slot
    _step(slots, rows, [5, 6])
    assert slots.order == [0, 1] and COPIES.moved == slots.cache.bytes(slots.lengths[0] - 1)
    assert COPIES.other_rows == COPIES.moved and slots.lengths[2] == 0 and slots.memory.bounds[2] == []
    row, _ = _join(slots, template, ids[0], states[1])
    rows.append(row)

    own = COPIES.own_rows
    slot = slots.hold(1)  # a rewind in the row's slot, held out of the step: a length change and one forward
    alone = rows[1].session
    assert slots.tokens[slot] == alone.tokens[0].tolist()
    cut = alone.length - 3
    torch.testing.assert_close(slots.row(slot).truncate(cut), alone.truncate(cut), atol=ATOL, rtol=0)
    _step(slots, [rows[0], rows[2]], [21, 22])  # the others step without it
    slots.release(slot)
    rows = [rows[0], rows[2], rows[1]]
    slot = slots.hold(1)  # one that grows: new tokens fed at its slot alone
    torch.testing.assert_close(slots.row(slot).extend(torch.tensor([[3, 4, 5]])),
                               rows[1].session.extend(torch.tensor([[3, 4, 5]])), atol=ATOL, rtol=0)
    slots.release(slot)
    rows = [rows[0], rows[2], rows[1]]
    for t in range(3):
        _step(slots, rows, [20 + t, 30 + t, 40 + t])
    assert COPIES.other_rows == COPIES.moved and COPIES.own_rows == own  # rewinds copied nothing
    for i, row in enumerate(rows):  # each slot holds its row's tokens and reads its row's memory
        assert slots.tokens[slots.order[i]] == row.session.tokens[0].tolist()
        own = row.session.memory_state
        assert (slots.row_memory(i) is None) == (own is None)
        assert own is None or slots.row_memory(i).unit_bounds == own.unit_bounds


def test_a_row_memory_changed_in_its_slot_is_read_by_that_row_only():
    """A refresh writes the row's own memory slot (engine/slot_memory.py): the other rows' slots and
    the buffers stay where they are, and every row reads what it reads alone."""
    ewe, ids, template, states = _setup()
    slots = SlotSession(template, 3)
    rows = [_join(slots, template, ids[i], state)[0] for i, state in enumerate([states[2], None, states[0]])]
    _step(slots, rows, [7, 8, 9])
    before = [k.clone() for k in slots.memory.keys]
    where = [k.data_ptr() for k in slots.memory.keys]
    slots.set_row_memory(1, states[0])
    rows[1].session.set_memory(states[0])
    _step(slots, rows, [9, 10, 11])
    assert [k.data_ptr() for k in slots.memory.keys] == where
    for k, old in zip(slots.memory.keys, before):
        assert torch.equal(k[0], old[0]) and torch.equal(k[2], old[2])
    slots.set_row_memory(0, None)
    rows[0].session.set_memory(None)
    _step(slots, rows, [12, 13, 14])
    assert slots.row_memory(0) is None and slots.memory.bounds[0] == []


def test_buffers_outgrown_keep_every_row_and_count_the_copy():
    """More rows than slots, a row longer than the positions: the buffers grow (every row copied,
    counted apart), and the rows go on as alone."""
    ewe, ids, template, states = _setup()
    slots = SlotSession(template, 1)
    rows = [_join(slots, template, ids[0], states[0])[0]]
    COPIES.reset()
    rows.append(_join(slots, template, ids[1], states[1])[0])
    assert slots.cache.slots == 2 and COPIES.grown == cache_bytes(rows[0].session.cache) == COPIES.other_rows
    positions = slots.cache.positions
    slot = slots.hold(0)
    long = [3] * (positions - slots.lengths[slot] + 2)
    slots.row(slot).extend(torch.tensor([long]))
    rows[0].session.extend(torch.tensor([long]))
    slots.release(slot)
    rows = [rows[1], rows[0]]
    assert slots.cache.positions > positions
    _step(slots, rows, [4, 5])


def test_a_branch_from_a_held_slot_is_the_branch_from_the_row_alone_and_copies_its_prefix_once_per_row():
    """`SlotSession.branch` (a row waiting out its candidates, held in its slot) gives the logits
    `DecodingSession.branch` gives from the row decoded alone, copying the prefix once per candidate
    row; the held row is out of the steps meanwhile and rejoins as it was."""
    ewe, ids, template, states = _setup()
    slots = SlotSession(template, 2)
    rows = [_join(slots, template, ids[i], states[i])[0] for i in range(2)]
    _step(slots, rows, [7, 8])
    slot = slots.hold(0)
    alone = rows[0].session
    cut = alone.length - 2
    COPIES.reset()
    branch, logits = slots.branch(slot, cut, 3, states[2].select_rows([0, 0, 0]) if states[2] is not None else None)
    assert COPIES.branched == 3 * slots.cache.bytes(cut - 1) and COPIES.own_rows == COPIES.other_rows == 0
    reference, expected = alone.branch(cut, 3, states[2].select_rows([0, 0, 0]) if states[2] is not None else None)
    torch.testing.assert_close(logits, expected, atol=ATOL, rtol=0)
    assert branch.tokens.tolist() == reference.tokens.tolist()
    _step(slots, [rows[1]], [9])  # the held row is not fed
    assert slots.tokens[slot] == alone.tokens[0].tolist()
    slots.release(slot)
    _step(slots, [rows[1], rows[0]], [10, 11])
