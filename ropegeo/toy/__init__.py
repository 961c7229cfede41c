"""Gate C's toolkit: tiny attention heads trained in numpy, run under extension rules, and read.

Two heads are trained with Adam and gradients derived by hand (the tests check them against
finite differences): a content-free *offset head* that attends ``offset`` positions back and a
*match head* that attends to the most recent earlier occurrence of its own token. They are then
run at other lengths, under other frequency schedules and under interventions, and read.

``ropegeo.toy.training``
    bounds, seeds, optimiser settings, Adam, the masked softmax;
``ropegeo.toy.heads``
    :class:`OffsetHead`, :class:`MatchHead`, their losses and trainers, :func:`fine_tune`;
``ropegeo.toy.evaluation``
    :func:`evaluate`, :func:`evaluate_seeds`, :func:`compare`;
``ropegeo.toy.readouts``
    :func:`score_profile`, :func:`pair_profiles`, :func:`pair_shapes`, :func:`distant_rival`.

Gate C's verdict, :func:`ropegeo.gates.c.gate_c`, runs these heads; it lives with the other gates
in ``ropegeo.gates``. The extension rules come from :mod:`ropegeo.scaling`. The other modules
of this package (the position schemes and their heads, the interventions, the fine-tuning budget
curves) are imported by their own names.
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
