"""The data stage end to end with the real BPE tokenizer, trained on the tiny fixture."""

from llm_from_scratch.data.datamodule import build_data
from llm_from_scratch.tokenizer.config import TokenizerConfig


def test_build_data_batches_decode_back_to_the_normalized_text(tiny_enja, tmp_path):
    tiny_enja.max_tokens, tiny_enja.max_length_ratio, tiny_enja.batch_tokens = 64, 9.0, 512
    tok_cfg = TokenizerConfig(vocab_size=400, dir=str(tmp_path / "tokenizers"))
    data = build_data(tiny_enja, tok_cfg)
    train = data.splits["train"]
    decoded = 0
    for batch in data.train_loader(epoch=0):
        assert batch.tgt_in[:, 0].eq(data.tgt_tok.bos_id).all()
        for row, index in enumerate(batch.indices.tolist()):
            src = batch.src[row][batch.src_mask[row]].tolist()
            tgt = batch.tgt_out[row][batch.tgt_mask[row]].tolist()
            assert src[-1] == data.src_tok.eos_id and tgt[-1] == data.tgt_tok.eos_id
            assert data.src_tok.decode(src[:-1]) == data.src_tok.normalize(train[index]["src"])
            assert data.tgt_tok.decode(tgt[:-1]) == data.tgt_tok.normalize(train[index]["tgt"])
            decoded += 1
    assert decoded == len(train) == 12
    assert "New York" in "".join(train["tgt"])  # detokenized, Latin spacing kept
