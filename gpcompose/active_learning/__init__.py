"""The protocol shared by the active learners on expensive targets (`svbmc`, `bvbmc`, `bo`):
`init`/`ask`/`tell`/`result` on a fixed-capacity buffer of evaluations, a host driver for
Python black-box targets with checkpoints, and a traced driver for JAX targets."""

from ._black_box import call_black_box as call_black_box
from ._checkpoint import load_checkpoint as load_checkpoint
from ._checkpoint import read_checkpoint_header as read_checkpoint_header
from ._checkpoint import save_checkpoint as save_checkpoint
from ._drivers import Checkpoint as Checkpoint
from ._drivers import Progress as Progress
from ._drivers import run_black_box as run_black_box
from ._drivers import run_traceable as run_traceable
from ._evaluations import Evaluations as Evaluations
from ._evaluations import buffer_rows as buffer_rows
from ._failures import censor_failures as censor_failures
from ._failures import failure_value as failure_value
from ._failures import repeats_failure as repeats_failure
from ._learner import AbstractActiveLearner as AbstractActiveLearner
from ._learner import AbstractLearnerState as AbstractLearnerState
from ._learner import TellInfo as TellInfo
from ._learner import require_single_run as require_single_run
from ._update_key import update_key as update_key
