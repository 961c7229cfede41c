"""Gate C's toolkit: tiny attention heads trained in numpy, run under extension rules, and read.

A content-free *offset head* and a *match head* (the most recent earlier occurrence of its token)
are trained with Adam and hand-derived gradients (checked against finite differences in the
tests), then run at other lengths, schedules and interventions: ``training`` (bounds, seeds,
Adam), ``heads`` (the heads, losses, trainers, :func:`fine_tune`), ``evaluation``
(:func:`evaluate`, :func:`evaluate_seeds`, :func:`compare`) and ``readouts``
(:func:`score_profile`, :func:`pair_profiles`, :func:`pair_shapes`, :func:`distant_rival`). Gate C's verdict is
:func:`ropegeo.gates.c.gate_c`; the other modules here are imported by their own names.
"""

from ropegeo.toy.evaluation import (EXTENSIONS, MAX_BINS, MAX_CONDITIONS, MAX_SEQUENCES, Binned, Evaluation,
                                    SeedResults, compare, evaluate, evaluate_seeds)
from ropegeo.toy.heads import (MatchHead, OffsetHead, fine_tune, match_cross_entropy, match_head_loss, match_targets,
                               offset_head_loss, train_heads, train_match_head, train_offset_head)
from ropegeo.toy.readouts import (MAX_PROFILE_CELLS, MAX_PROFILE_LENGTH, DistantRival, PairProfile, distant_rival,
                                  pair_profiles, pair_shapes, score_profile)
from ropegeo.toy.training import (MAX_BATCH, MAX_HEAD_LENGTH, MAX_INIT_STD, MAX_LR, MAX_MATCH_LENGTH, MAX_SEEDS,
                                  MAX_STEP_BYTES, MAX_STEPS, MAX_TRAINED_HEAD_DIM, MAX_VOCAB, Adam, check_match_step,
                                  check_step_memory, check_theta, check_trained, match_step_bytes, one_blas_thread,
                                  seed_list, training_settings)

__all__ = [
    "EXTENSIONS", "OffsetHead", "MatchHead", "Evaluation", "Binned", "SeedResults", "PairProfile", "DistantRival",
    "train_offset_head", "train_match_head", "train_heads", "fine_tune", "offset_head_loss", "match_head_loss",
    "match_targets", "evaluate", "evaluate_seeds", "compare", "score_profile", "pair_profiles", "pair_shapes",
    "distant_rival",
    # the training toolkit, shared with ropegeo.toy.alternatives
    "Adam", "one_blas_thread", "match_cross_entropy", "seed_list", "training_settings", "check_step_memory",
    "check_match_step", "match_step_bytes", "check_theta", "check_trained",
    # bounds
    "MAX_HEAD_LENGTH", "MAX_MATCH_LENGTH", "MAX_TRAINED_HEAD_DIM", "MAX_VOCAB", "MAX_BATCH", "MAX_SEEDS",
    "MAX_STEPS", "MAX_LR", "MAX_INIT_STD", "MAX_STEP_BYTES", "MAX_SEQUENCES", "MAX_CONDITIONS", "MAX_BINS",
    "MAX_PROFILE_LENGTH", "MAX_PROFILE_CELLS",
]
