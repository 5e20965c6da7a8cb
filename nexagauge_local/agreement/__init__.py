"""Judge agreement with human labels: label files in, per-metric agreement statistics out."""

from nexagauge_local.agreement.labels import Label, LabelError, bundled_labels_path, load_labels
from nexagauge_local.agreement.run import write_agreement
from nexagauge_local.agreement.scores import binary_agreement, compute_agreement

__all__ = [
    "Label",
    "LabelError",
    "binary_agreement",
    "bundled_labels_path",
    "compute_agreement",
    "load_labels",
    "write_agreement",
]
