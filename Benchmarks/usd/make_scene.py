#!/usr/bin/env python3
"""Writes the benchmark scene: 10k prims (5k Xform + 5k Mesh, 60k triangles) as a usdc-root
and a usda-root USDZ package. Usage: make_scene.py OUTDIR"""
import os
import sys
import tempfile

from pxr import Gf, Sdf, Usd, UsdGeom, UsdUtils, Vt


def build(path):
    stage = Usd.Stage.CreateNew(path)
    UsdGeom.SetStageUpAxis(stage, UsdGeom.Tokens.y)
    root = UsdGeom.Xform.Define(stage, "/Root")
    stage.SetDefaultPrim(root.GetPrim())
    points = Vt.Vec3fArray([Gf.Vec3f(x * 0.1, y * 0.1, (x * y) % 3 * 0.01) for y in range(3) for x in range(4)])
    counts = Vt.IntArray([4] * 6)
    indices = Vt.IntArray([i for y in range(2) for x in range(3)
                           for i in (y * 4 + x, y * 4 + x + 1, (y + 1) * 4 + x + 1, (y + 1) * 4 + x)])
    if True:
        for g in range(50):
            group = UsdGeom.Xform.Define(stage, f"/Root/Group_{g}")
            group.AddTranslateOp().Set(Gf.Vec3d(g * 2.0, 0, 0))
            for i in range(99):
                xf = UsdGeom.Xform.Define(stage, f"/Root/Group_{g}/Item_{i}")
                xf.AddTranslateOp().Set(Gf.Vec3d(0, i * 0.5, (i % 7) * 0.3))
                xf.AddRotateYOp().Set(float(i * 13 % 360))
                mesh = UsdGeom.Mesh.Define(stage, f"/Root/Group_{g}/Item_{i}/Mesh")
                # Unique points per mesh, so the crate cannot share one array among all meshes.
                shift = Gf.Vec3f(0, 0, (g * 99 + i) * 1e-4)
                mesh.CreatePointsAttr(Vt.Vec3fArray([p + shift for p in points]))
                mesh.CreateFaceVertexCountsAttr(counts)
                mesh.CreateFaceVertexIndicesAttr(indices)
                mesh.CreateExtentAttr(Vt.Vec3fArray([Gf.Vec3f(0, 0, 0), Gf.Vec3f(0.3, 0.2, 0.02)]))
            for i in range(1):
                mesh = UsdGeom.Mesh.Define(stage, f"/Root/Group_{g}/Extra_{i}")
                mesh.CreatePointsAttr(points)
                mesh.CreateFaceVertexCountsAttr(counts)
                mesh.CreateFaceVertexIndicesAttr(indices)
    stage.GetRootLayer().Save()


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else "."
    os.makedirs(out, exist_ok=True)
    work = tempfile.mkdtemp()
    build(os.path.join(work, "scene.usdc"))
    Sdf.Layer.FindOrOpen(os.path.join(work, "scene.usdc")).Export(os.path.join(work, "scene.usda"))
    for ext in ("usdc", "usda"):
        target = os.path.join(out, f"scene_{ext}.usdz")
        if os.path.exists(target):
            os.remove(target)
        UsdUtils.CreateNewUsdzPackage(Sdf.AssetPath(os.path.join(work, f"scene.{ext}")), target)
        print(target, os.path.getsize(target))


if __name__ == "__main__":
    main()
