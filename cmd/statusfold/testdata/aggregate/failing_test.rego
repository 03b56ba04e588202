package mytests

import data.statusfold.builtin.deployment

test_ready_is_max if deployment.combine.readyReplicas == "max"
