"""The final model, a step after training (as JoeyNMT's `test()` is): `averaged.pt` from the kept
snapshots, else `best.pt`, scored on dev and, once, on test (greedy, like every validation)."""

from __future__ import annotations

import logging

from llm_from_scratch.checkpoint import load_checkpoint
from llm_from_scratch.model.transformer import Seq2SeqTransformer
from llm_from_scratch.paths import RunDir
from llm_from_scratch.training.averaging import average_checkpoints, record_dev_scores
from llm_from_scratch.training.config import averages
from llm_from_scratch.training.report import FinalModel, hparams, scores_text
from llm_from_scratch.training.stats import RunLogger
from llm_from_scratch.training.trainer import Trainer
from llm_from_scratch.training.validation import Validator

logger = logging.getLogger(__name__)


def finish(trainer: Trainer, metrics: dict[str, float], log: RunLogger) -> FinalModel | None:
    """The run's end, once `trainer` has trained to its last `metrics` (none: it trained
    nothing): the final model and its scores (`final_model`), and the run's hparams for
    TensorBoard. None: no model to hand over, or not the main process."""
    validator = trainer.validator()
    if not metrics or validator is None:
        return None
    config = trainer.config
    step, keep = trainer.progress.step, config.training.keep_snapshots
    final = final_model(trainer.model, validator, trainer.run_dir, keep, step, log)
    run_hparams = hparams(config, trainer.plan, trainer.model, trainer.precision.name)
    log.hparams(run_hparams, {f"hparam/{k}": v for k, v in metrics.items()})
    return final


def final_model(
    model: Seq2SeqTransformer,
    validator: Validator,
    run_dir: RunDir,
    keep_snapshots: int,
    step: int,
    log: RunLogger,
) -> FinalModel | None:
    """The model the run at `step` hands over, and its scores; `model` (which `validator` scores)
    gets its weights for the scoring and keeps its own afterwards. None: no model to hand over."""
    kept = run_dir.snapshot_paths()[-keep_snapshots:] if keep_snapshots else []
    averaged = None
    if averages(keep_snapshots, len(kept)):
        path = run_dir.averaged
        logger.info("averaging the last %d snapshots into %s", len(kept), path.name)
        averaged = average_checkpoints(kept, path)
        weights = averaged["model"]
        description, dev = f"the average of the last {len(kept)} snapshots", None
    else:
        path = run_dir.best
        if not path.is_file():
            return None
        state = load_checkpoint(path, map_location=next(model.parameters()).device)
        weights, dev = state["model"], state["metrics"]
        best_step = state["progress"]["step"]
        description = f"the best dev BLEU, step {best_step}"
        if best_step == 0 and "parent" in state:
            description += ": the parent's weights, which no step of this run beat on dev"
    trained = {key: value.clone() for key, value in model.state_dict().items()}
    model.load_state_dict(weights)
    try:
        if dev is None:
            dev = validator.run(step, log, tag="dev_averaged")
            logger.info("%s | dev %s", path.name, scores_text(dev))
            record_dev_scores(path, averaged, step, dev)
        test_sentences = len(validator.data.splits["test"])
        logger.info("translating the test split (%d sentences, greedy)", test_sentences)
        test = validator.score_test(step, log)
    finally:
        model.load_state_dict(trained)
    return FinalModel(path, description, dev, test, test_sentences)
