#!/usr/bin/env python3
"""Baseline: usd-core opens the package and computes every prim's world box."""
import sys

from pxr import Usd, UsdGeom

stage = Usd.Stage.Open(sys.argv[1])
cache = UsdGeom.BBoxCache(Usd.TimeCode.Default(), ["default", "render"], useExtentsHint=False)
count = 0
for prim in stage.Traverse():
    cache.ComputeWorldBound(prim).ComputeAlignedRange()
    if prim.IsA(UsdGeom.Mesh):
        mesh = UsdGeom.Mesh(prim)
        mesh.GetPointsAttr().Get()
        mesh.GetFaceVertexCountsAttr().Get()
    count += 1
print(count, "prims", file=sys.stderr)
