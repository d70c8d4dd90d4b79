"""Forward kinematics of a planar arm with three revolute joints."""

import numpy as np

# Link lengths in metres, shoulder to wrist.
LINKS = np.array([1.0, 0.8, 0.5])


def f(q):
    """End-effector pose (x, y, orientation) for joint angles q (3,) in radians."""
    # Each link's absolute angle is the sum of the joint angles up to it.
    t1 = q[0]
    t2 = t1 + q[1]
    t3 = t2 + q[2]
    x = LINKS[0] * np.cos(t1) + LINKS[1] * np.cos(t2) + LINKS[2] * np.cos(t3)
    y = LINKS[0] * np.sin(t1) + LINKS[1] * np.sin(t2) + LINKS[2] * np.sin(t3)
    return np.stack([x, y, t3])
