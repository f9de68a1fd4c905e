import torch

from llm_from_scratch.data.batch import Collator, pad


def test_pad_right_pads_and_masks_real_tokens():
    ids, mask = pad([[5, 6, 7], [8]], pad_id=0)
    assert ids.tolist() == [[5, 6, 7], [8, 0, 0]]
    assert mask.tolist() == [[True, True, True], [True, False, False]]
    assert ids.dtype == torch.long and mask.dtype == torch.bool


def test_collate_shifts_the_target_and_appends_eos(word_tokenizer):
    tok = word_tokenizer
    rows = [
        {"src_ids": [10, 11], "tgt_ids": [20, 21, 22], "index": 4},
        {"src_ids": [12, 13, 14], "tgt_ids": [23], "index": 0},
    ]
    batch = Collator(tok, tok)(rows)
    pad_id, bos, eos = tok.pad_id, tok.bos_id, tok.eos_id
    assert batch.src.tolist() == [[10, 11, eos, pad_id], [12, 13, 14, eos]]
    assert batch.tgt_in.tolist() == [[bos, 20, 21, 22], [bos, 23, pad_id, pad_id]]
    assert batch.tgt_out.tolist() == [[20, 21, 22, eos], [23, eos, pad_id, pad_id]]
    assert batch.src_mask.tolist() == [[True, True, True, False], [True] * 4]
    assert batch.tgt_mask.tolist() == [[True] * 4, [True, True, False, False]]
    assert (batch.src_tokens, batch.tgt_tokens) == (7, 6)
    assert batch.indices.tolist() == [4, 0]


def test_to_moves_only_what_the_device_reads(word_tokenizer):
    batch = Collator(word_tokenizer, word_tokenizer)([{"src_ids": [9], "tgt_ids": [9], "index": 0}])
    moved = batch.to("meta")
    devices = {name: tensor.device.type for name, tensor in vars(moved).items()}
    assert devices == {
        "src": "meta",
        "src_mask": "meta",
        "tgt_in": "meta",
        "tgt_out": "meta",
        "tgt_mask": "cpu",  # counted on the host
        "indices": "cpu",
    }
    assert moved.tgt_mask is batch.tgt_mask and batch.src.device.type == "cpu"
