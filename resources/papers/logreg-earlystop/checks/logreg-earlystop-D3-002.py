"""logreg-earlystop-D3-002: the majority_class baseline predicts the training split's most frequent
class for every test sample.

Imports `esl.baselines` (fit_majority_class, predict_majority_class).
"""

import numpy as np
from esl.baselines import fit_majority_class, predict_majority_class

for share, majority in ((0.8, 1.0), (0.2, 0.0), (0.6, 1.0)):
    y = np.array([1.0] * int(100 * share) + [0.0] * (100 - int(100 * share)))
    label = fit_majority_class(y)
    assert float(label) == majority, f"{share:.0%} positives: majority {label}, expected {majority}"
    pred = np.asarray(predict_majority_class(label, 7))
    assert pred.shape == (7,) and np.all(pred == majority), "not the majority class everywhere"
print("majority_class predicts the training split's most frequent class")
