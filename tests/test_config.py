"""Every config file composes and validates; bad values fail with messages that name them."""

from __future__ import annotations

import dataclasses
import re
import typing
from pathlib import Path

import pytest
from omegaconf import DictConfig, OmegaConf

from llm_from_scratch.errors import ConfigError, check_range
from llm_from_scratch.paths import project_root
from llm_from_scratch.programs.prepare_data import PrepareDataConfig
from llm_from_scratch.programs.train import TrainConfig
from llm_from_scratch.programs.train_tokenizer import TokenizerJobConfig
from llm_from_scratch.schema import to_data, to_schema
from llm_from_scratch.training.plan import Schedule

CONFIG_DIR = Path(__file__).resolve().parents[1] / "configs"

PRIMARY = {
    "train": TrainConfig,
    "prepare_data": PrepareDataConfig,
    "train_tokenizer": TokenizerJobConfig,
}
GROUPS = ("paths", "data", "tokenizer", "model", "training", "decoding", "experiment")


def group_options(group: str) -> list[str]:
    return sorted(path.stem for path in (CONFIG_DIR / group).glob("*.yaml"))


@pytest.mark.parametrize("name", sorted(PRIMARY))
def test_primary_configs_compose(compose_config, name):
    config = to_schema(compose_config(name), PRIMARY[name])
    assert config.data.name == "everyday_mix"
    assert Path(config.paths.raw_dir) == project_root() / "data" / "raw"


# tests/data/test_shipped_sources.py composes `data=` and `experiment=` into train and validates
# them too (and checks their corpora's sources), fast; here those run in the slow pass.
COMPOSED_ELSEWHERE = ("data", "experiment")


@pytest.mark.parametrize(
    "group,option",
    [
        pytest.param(group, option, marks=pytest.mark.slow if group in COMPOSED_ELSEWHERE else ())
        for group in GROUPS
        for option in group_options(group)
    ],
)
def test_every_group_option_composes_into_train(train_config, group, option):
    train_config(f"{group}={option}")  # composes, and the schema validates it


def test_every_group_has_options():
    for group in GROUPS:
        assert group_options(group), f"configs/{group}/ is empty"


def test_smoke_experiment_selects_tiny_model_and_its_run_dir(train_config):
    config = train_config("experiment=smoke")
    tiny = train_config("model=tiny").model
    assert config.model == tiny
    assert Path(config.paths.run_dir) == project_root() / "runs" / "smoke"


def test_short_experiment_trains_the_short_recipe_for_its_steps(train_config):
    from llm_from_scratch.training.plan import Schedule, recipe_plan

    config = train_config("experiment=short")
    plan = recipe_plan(config, Schedule.of(config.training))
    short = config.training.short_run
    assert config.training.max_time is None and plan.schedule.short
    assert plan.schedule.steps == config.training.max_steps <= short.max_steps
    assert (plan.model.n_encoder_layers, plan.model.n_decoder_layers) == (
        short.n_encoder_layers,
        short.n_decoder_layers,
    )
    assert (plan.lr, plan.batch_tokens) == (short.lr, short.batch_tokens)


def test_the_slow_cpu_recipe_is_the_one_searched_on_dev(train_config, tmp_path):
    """The short recipe that won the search at a slow CPU's 30-minute compute (docs/results.md,
    The short recipe for slow CPUs): `make train` there trains exactly this."""
    from llm_from_scratch.training.plan import Schedule, recipe_plan

    fresh = f"paths.run_dir={tmp_path / 'run'}"  # no run to resume
    steps = ("training.max_steps=5169", "training.short_run.max_steps=5169")
    config = train_config("experiment=short", *steps, fresh)
    plan = recipe_plan(config, Schedule.of(config.training))
    assert plan.schedule.short and plan.schedule.steps == 5169
    assert (plan.model.n_encoder_layers, plan.model.n_decoder_layers) == (2, 2)
    assert (plan.model.d_model, plan.model.d_ff, plan.model.dropout) == (128, 512, 0.0)
    assert (plan.lr, plan.batch_tokens, config.training.label_smoothing) == (2.5e-3, 2048, 0.1)
    assert (plan.tokenizer.vocab_size, plan.tokenizer.shared) == (4000, False)
    # wsd's five averaged snapshots inside its decay, the last fifth: 1,034 steps
    assert (plan.schedule.warmup_steps, plan.schedule.decay_steps) == (739, 1034)
    assert plan.schedule.save_every == 206
    # the crossover measured at a slow CPU's two hours: 3,468 default steps lost to this recipe
    assert config.training.short_run.min_default_steps == 3600
    # a corpus whose Japanese a 4k vocabulary cannot hold keeps its 8k
    steps = ("training.max_time=null", "training.max_steps=2263")
    kftt = train_config("experiment=kftt", *steps, fresh)
    assert recipe_plan(kftt).tokenizer.vocab_size == 8000


def test_distilled_experiment_is_spe_tokenized_plus_the_teachers_translations(train_config):
    distilled = train_config("experiment=spe_distilled")
    teacher = train_config("experiment=spe_tokenized")
    root = project_root()
    assert [(Path(e.source), Path(e.target)) for e in distilled.data.extra_train] == [
        (
            root / "data/raw/small_parallel_enja/train.en",
            root / "runs/spe_tokenized/eval-train/hypotheses.txt",
        )
    ]
    distilled.data.extra_train = []
    assert (distilled.data, distilled.model, distilled.tokenizer) == (
        teacher.data,
        teacher.model,
        teacher.tokenizer,
    )
    assert (distilled.training.max_steps, teacher.training.max_steps) == (6300, 8400)
    assert Path(distilled.paths.run_dir) == root / "runs" / "spe_distilled"


@pytest.mark.parametrize(
    "overrides,message",
    [
        (["model.d_model=250", "model.n_heads=8"], "model.d_model=250 is not divisible by"),
        (["model.dropout=1.5"], "model.dropout=1.5"),
        (["training.precision=fp8"], "training.precision='fp8'"),
        (["training.compile=maybe"], "training.compile='maybe'"),
        (["training.accumulation_steps=0"], "training.accumulation_steps=0"),
        (["decoding.beam_size=2", "decoding.nbest=3"], "decoding.nbest=3"),
        (["tokenizer.vocab_size=100"], "tokenizer.vocab_size=100"),
        (["data.source=ftp"], "data.source='ftp'"),
        (["data.number_digits=roman"], "data.number_digits='roman'"),
        (["decoding.number_digits=kanji"], "decoding.number_digits='kanji'"),
        (
            ["data=small_parallel_enja", "data.extra_train=[{source: a.en}]"],
            "missing mandatory value: target",
        ),
        # Out-of-range values are refused, never clamped into range.
        (["training.warmup_steps=-1"], "training.warmup_steps=-1 must be at least 0"),
        (["training.keep_snapshots=-2"], "training.keep_snapshots=-2 must be at least 0"),
        (["training.patience=0"], "training.patience=0 must be at least 1"),
        (["training.max_time=0"], "training.max_time='0' must be longer than zero"),
        (["training.lr=0"], "training.lr=0.0 must be positive"),
        (["decoding.length_penalty=-1"], "decoding.length_penalty=-1.0 must be at least 0"),
        (["decoding.max_len_b=0"], "decoding.max_len_b=0 must be at least 1"),
        (["model.max_positions=0"], "model.max_positions=0 must be at least 1"),
        (["tokenizer.character_coverage=0"], "tokenizer.character_coverage=0.0 must be in"),
        (
            ["data=small_parallel_enja", "data.corpus.test_fraction=-0.1"],
            "data.corpus.test_fraction=-0.1 must be in",
        ),
        (["data.loading.num_workers=-1"], "data.loading.num_workers=-1 must be at least 0"),
    ],
)
def test_invalid_values_are_named(train_config, overrides, message):
    with pytest.raises(ConfigError, match=message.replace("(", r"\(")):
        train_config(*overrides)


@pytest.mark.parametrize(
    ("setting", "on_cpu", "on_cuda"),
    [("auto", False, True), ("true", True, True), ("True", True, True), ("false", False, False)],
)
def test_compile_auto_compiles_on_cuda_only(train_config, setting, on_cpu, on_cuda):
    import torch

    training = train_config(f"training.compile={setting}")
    assert training.training.compiles(torch.device("cpu")) is on_cpu
    assert training.training.compiles(torch.device("cuda")) is on_cuda


# The groups whose schema's defaults are `make train`'s, so that a preset holds only what it
# changes (`data` options describe datasets: files, languages, formats, which no default can;
# `paths` has one option, which spells the layout out).
PRESET_GROUPS = ("tokenizer", "model", "training", "decoding")
ABSENT = object()  # a key the schema lacks (to_schema refuses it)


def repeated_defaults(values: object, defaults: object, prefix: str = "") -> list[str]:
    """The keys of `values` (a preset, nested) whose value is the one in `defaults`."""
    if not isinstance(values, dict) or not isinstance(defaults, dict):
        return [prefix.rstrip(".")] if values == defaults else []
    return [
        key
        for name, value in values.items()
        for key in repeated_defaults(value, defaults.get(name, ABSENT), f"{prefix}{name}.")
    ]


@pytest.mark.parametrize(
    "group,option", [(group, option) for group in PRESET_GROUPS for option in group_options(group)]
)
def test_a_preset_holds_only_the_keys_it_changes(group, option):
    """Each default is written once, in its stage's config.py: a preset that repeats one fails."""
    schema = typing.get_type_hints(TrainConfig)[group]
    values = OmegaConf.to_container(OmegaConf.load(CONFIG_DIR / group / f"{option}.yaml")) or {}
    to_schema(values, schema)  # only the schema's keys, valid values
    assert repeated_defaults(values, to_data(schema())) == []


def test_a_preset_that_repeats_a_default_is_caught():
    defaults = {"lr": 2e-3, "short_run": {"lr": 2.5e-3, "d_model": 128}}
    preset = {"lr": 1e-3, "short_run": {"lr": 2.5e-3, "d_model": None}}
    assert repeated_defaults(preset, defaults) == ["short_run.lr"]
    assert repeated_defaults({"short_run": None}, defaults) == []


@pytest.mark.parametrize("group", PRESET_GROUPS)
def test_the_option_train_yaml_picks_changes_nothing(group):
    """One source of defaults: a library user building a schema gets what `make train` gets."""
    choices = {
        key: value
        for entry in OmegaConf.load(CONFIG_DIR / "train.yaml").defaults
        if isinstance(entry, DictConfig)
        for key, value in entry.items()
    }
    assert not OmegaConf.load(CONFIG_DIR / group / f"{choices[group]}.yaml")


@pytest.mark.parametrize(
    ("override", "message"),
    [
        (
            "+training.max_step=100",
            "training.max_step is not a training setting; did you mean training.max_steps?",
        ),
        ("+model.d_modl=3", "model.d_modl is not a model setting; did you mean model.d_model?"),
        ("+training.short_run.lrr=3", "did you mean training.short_run.lr?"),
        ("+nmae=x", "nmae is not a setting; did you mean name?"),
    ],
)
def test_keys_added_with_plus_are_refused_naming_the_closest(train_config, override, message):
    with pytest.raises(ConfigError, match=re.escape(message)):
        train_config(override)


@pytest.mark.parametrize("width", [190, 193])
def test_a_short_recipe_width_the_heads_cannot_split_is_refused_naming_its_key(train_config, width):
    with pytest.raises(ConfigError, match=rf"^training\.short_run\.d_model={width} "):
        train_config(f"training.short_run.d_model={width}")


def test_unknown_key_is_rejected_at_composition(compose_config):
    from hydra.errors import ConfigCompositionException

    with pytest.raises(ConfigCompositionException, match="d_modl"):
        compose_config("train", ["model.d_modl=3"])


@pytest.mark.parametrize(
    ("overrides", "carved"),
    [
        (["data=local_tsv"], ["dev", "test"]),
        (["data=local_tsv", "data.corpus.splits.dev=valid.tsv"], ["test"]),
        (["data=local_tsv", "data.corpus.splits={train: a.tsv, dev: b.tsv, test: c.tsv}"], []),
        (["data=small_parallel_enja"], []),
    ],
)
def test_splits_named_on_the_command_line_are_read_and_the_others_carved(
    train_config, overrides, carved
):
    config = train_config(*overrides)
    assert config.data.corpus.carved_splits == carved


@pytest.mark.parametrize(
    ("value", "bounds", "message"),
    [
        (0, {"low": 1}, "k=0 must be at least 1"),
        (0.0, {"low": 0, "low_open": True}, "k=0.0 must be positive"),
        (-1, {"low": 0}, "k=-1 must be at least 0"),
        (1.0, {"low": 0, "high": 1, "high_open": True}, r"k=1.0 must be in \[0, 1\)"),
        (0, {"low": 0, "high": 1, "low_open": True}, r"k=0 must be in \(0, 1\]"),
        (5, {"high": 4}, "k=5 must be at most 4"),
    ],
)
def test_check_range_refuses_values_out_of_range_naming_the_range(value, bounds, message):
    with pytest.raises(ConfigError, match=f"^{message}$"):
        check_range("k", value, **bounds)


def test_check_range_passes_bounds_and_unset_values():
    check_range("k", 1, 1)
    check_range("k", 1.0, 0, 1)
    check_range("k", None, 1)


def test_the_kftt_recipe_trains_two_hours_on_either_kftt_corpus_in_either_direction(
    train_config,
):
    from llm_from_scratch.training.config import parse_duration

    kftt, kyoto_wiki = train_config("experiment=kftt"), train_config("experiment=kyoto_wiki")
    default = train_config()
    assert parse_duration(kftt.training.max_time) == 2 * 3600
    assert kftt.training.eval_every > default.training.eval_every
    assert kftt.decoding.length_penalty < default.decoding.length_penalty
    assert kftt.model == default.model and kftt.model.dropout == 0.0
    assert (kftt.model.n_encoder_layers, kftt.model.n_decoder_layers) == (3, 3)
    assert (kftt.model.d_model, kftt.model.d_ff) == (256, 1024)  # kept over 320 and 1,280
    # Both chosen on KFTT's dev set: a lower peak rate than the default's, the same batches.
    assert kftt.training.lr == 1.0e-3 < default.training.lr
    assert kftt.data.loading.batch_tokens == 4096 == default.data.loading.batch_tokens
    assert kftt.data.loading.bpe_dropout == 0.0  # kept off over 0.1
    assert (kftt.tokenizer.vocab_size, kftt.tokenizer.shared) == (8000, False)  # over 16k, 32k
    assert kyoto_wiki.data.loading == kftt.data.loading
    on_the_mirror = train_config("experiment=kftt", "data=kyoto_wiki").data
    assert on_the_mirror.name == "kyoto_wiki" and on_the_mirror.loading == kftt.data.loading
    assert (kftt.data.name, kyoto_wiki.data.name) == ("kftt", "kyoto_wiki")
    assert kyoto_wiki.training == kftt.training and kyoto_wiki.model == kftt.model
    assert kyoto_wiki.tokenizer == kftt.tokenizer
    for experiment, corpus in (("kftt_ja_en", "kftt"), ("kyoto_wiki_ja_en", "kyoto_wiki")):
        reversed_run = train_config(f"experiment={experiment}")
        assert (reversed_run.data.name, reversed_run.data.direction) == (corpus, "ja-en")
        assert reversed_run.training == kftt.training and reversed_run.model == kftt.model
        assert reversed_run.decoding.prefer_finished and kftt.decoding.prefer_finished
        assert reversed_run.decoding.length_penalty < kftt.decoding.length_penalty


def test_the_kftt_gpu_recipe_is_kftt_with_transformer_base_and_reads_either_corpus(
    train_config,
):
    kftt, gpu = train_config("experiment=kftt"), train_config("experiment=kftt_gpu")
    base = train_config("model=base").model
    assert gpu.model == base and gpu.model != kftt.model
    assert (gpu.tokenizer, gpu.decoding) == (kftt.tokenizer, kftt.decoding)
    assert gpu.data.loading.batch_tokens > kftt.data.loading.batch_tokens
    assert gpu.training.max_steps > kftt.training.max_steps
    on_the_mirror = train_config("experiment=kftt_gpu", "data=kyoto_wiki")
    assert on_the_mirror.data.name == "kyoto_wiki" and on_the_mirror.model == base
    assert on_the_mirror.data.loading == gpu.data.loading
    # No short recipe: a GPU's minutes train base with its own batches, the warm-up and the
    # snapshot interval a share of the steps planned (a tenth of ten minutes' updates).
    assert gpu.training.short_run is None
    minutes = Schedule.of(gpu.training, gpu.training.max_steps // 10)
    assert not minutes.short and minutes.steps == gpu.training.max_steps // 10
    assert minutes.warmup_steps == gpu.training.warmup_steps // 10 == minutes.steps // 10
    assert 5 * minutes.save_every == minutes.steps // 5  # averaged.pt: the last fifth


def test_the_finetune_recipe_starts_from_the_default_run_and_selects_on_the_domain(train_config):
    for domain in ("ami_meeting", "bsd_dialogue"):
        config = train_config("experiment=finetune", f"data={domain}_replay")
        assert config.training.init_from == "run:default"
        assert config.training.budget_seconds == 600
        assert config.training.short_run is None and config.training.keep_snapshots == 0
        assert config.training.patience is not None
        data = config.data
        assert data.dev_corpus == domain and list(data.mixture) == [
            domain,
            "small_parallel_enja",
            "tanaka_graded",
        ]
        # the replay chosen on dev (docs/results.md, Fine-tuning), the domain's pairs twice
        assert [member.weight for member in data.mixture.values()] == [2.0, 0.3, 0.3]
        # the parent's placeholders and sentence pairs, which its tokenizers were trained for
        everyday = train_config("data=everyday_mix").data
        for key in ("number_placeholders", "name_placeholders", "sentence_pairs"):
            assert getattr(data, key) == getattr(everyday, key), key
        assert data.mixture[domain].corpus.group_column == "document"
        assert data.mixture[domain].corpus.test_fraction == 0  # its test split is held back
    without = train_config(
        "experiment=finetune",
        "data=ami_meeting_replay",
        "data.mixture.small_parallel_enja.weight=0",
        "data.mixture.tanaka_graded.weight=0",
    )
    assert [member.weight for member in without.data.mixture.values()] == [2.0, 0.0, 0.0]


def test_the_general_parent_holds_every_corpus_of_the_mirror_on_cpu_and_gpu(train_config):
    general, gpu = train_config("experiment=general"), train_config("experiment=general_gpu")
    assert set(general.data.mixture) == {
        "small_parallel_enja",
        "tanaka_graded",
        "kyoto_wiki",
        "coursera_lectures",
        "tech_docs",
        "ami_meeting",
        "bsd_dialogue",
        "news_ja_origin",
        "wmt_news",
    }
    scored_only = [name for name, member in general.data.mixture.items() if not member.weight]
    assert scored_only == ["wmt_news"]  # its dev and test: validated and scored on, never trained
    assert general.training.budget_seconds == 2 * 3600
    assert general.tokenizer == train_config().tokenizer  # 8k each side, trained on the mixture
    assert (
        general.data.cleaning.max_tokens == train_config("data=kyoto_wiki").data.cleaning.max_tokens
    )
    assert gpu.data.mixture == general.data.mixture and gpu.tokenizer == general.tokenizer
    base = train_config("model=base").model
    assert gpu.model == dataclasses.replace(base, dropout=0.1)
    assert gpu.data.loading.batch_tokens > general.data.loading.batch_tokens
    assert gpu.training.budget_seconds == 3600


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        (["data=ami_meeting", "data.dev_corpus=ami_meeting"], "picks a corpus of a mixture"),
        (["data=ami_meeting_replay", "data.dev_corpus=kyoto_wiki"], "is not a corpus of the"),
    ],
)
def test_fine_tuning_data_settings_are_checked_as_composed(train_config, overrides, message):
    with pytest.raises(ConfigError, match=message):
        train_config(*overrides)
