#!/usr/bin/env python3
"""Writes RoomPlan-like packages for the transcode benchmark: `make_scans.py OUT_DIR`.

Same shape as the test fixture `roomscan.usdz` (Tests/USDTests/Fixtures/generate.py, whose
helpers this reuses): `/Room/Parametric_grp/{Arch_grp,Floor_grp,Object_grp}/…` untyped
groups, one referenced usdc layer per RoomPlan element, objects of the 16 categories with
meshes under a `Geom_grp`, textured materials, and the matching CapturedRoom JSON. Scaled
up by more objects, denser meshes (each box face an n×n grid, face-varying normals and UVs)
and more, larger PNG textures (seeded noise, so they do not compress away). Writes
`scan_{small,medium,large}.usdz` and `.roomplan.json` into OUT_DIR and prints
`name bytes meshes triangles textures` per package. Nothing here is committed output.
"""
import os
import random
import shutil
import sys
import tempfile

import numpy as np
from PIL import Image
from pxr import Gf, Sdf, Usd, UsdGeom, UsdUtils, Vt

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "Tests", "USDTests", "Fixtures"))
from generate import (bind, captured_entry, element_layer, reference_element, room_object, room_shell, room_uuid,  # noqa: E402
                      textured_material)

CATEGORIES = ["storage", "refrigerator", "stove", "bed", "sink", "washerDryer", "toilet", "bathtub", "oven",
              "dishwasher", "table", "sofa", "chair", "fireplace", "television", "stairs"]

# name: (room width/depth in m, objects, grid n per box face, textures, texture side in px)
SCALES = {
    "small": ((5.0, 4.0), 12, 6, 2, 256),
    "medium": ((8.0, 6.0), 40, 14, 6, 512),
    "large": ((12.0, 9.0), 90, 18, 8, 1024),
}


def grid_box(stage, path, size, offset, n):
    """A box centred at `offset` whose every face is an n×n grid of quads (own points per face)."""
    mesh = UsdGeom.Mesh.Define(stage, path)
    half = np.array(size, dtype=np.float64) / 2
    u = np.linspace(-1.0, 1.0, n + 1)
    gu, gv = np.meshgrid(u, u, indexing="ij")
    gu, gv = gu.ravel(), gv.ravel()
    points, normals, uvs, indices = [], [], [], []
    quad = np.array([[i * (n + 1) + j, (i + 1) * (n + 1) + j, (i + 1) * (n + 1) + j + 1, i * (n + 1) + j + 1]
                     for i in range(n) for j in range(n)], dtype=np.int32)
    for axis in range(3):
        for sign in (-1.0, 1.0):
            a, b = [k for k in range(3) if k != axis]
            p = np.zeros((len(gu), 3))
            p[:, axis] = sign
            p[:, a] = gu if sign > 0 else -gu
            p[:, b] = gv
            base = sum(len(x) for x in points)
            points.append(p * half + np.array(offset))
            normal = np.zeros(3)
            normal[axis] = sign
            normals.append(np.tile(normal, (quad.size, 1)))
            uv = np.stack([(gu + 1) / 2, (gv + 1) / 2], axis=1)
            uvs.append(uv[quad.ravel()])
            indices.append(quad.ravel() + base)
    mesh.CreatePointsAttr(Vt.Vec3fArray.FromNumpy(np.concatenate(points).astype(np.float32)))
    mesh.CreateFaceVertexCountsAttr(Vt.IntArray.FromNumpy(np.full(6 * n * n, 4, dtype=np.int32)))
    mesh.CreateFaceVertexIndicesAttr(Vt.IntArray.FromNumpy(np.concatenate(indices).astype(np.int32)))
    mesh.CreateNormalsAttr(Vt.Vec3fArray.FromNumpy(np.concatenate(normals).astype(np.float32)))
    mesh.SetNormalsInterpolation(UsdGeom.Tokens.faceVarying)
    st = UsdGeom.PrimvarsAPI(mesh).CreatePrimvar("st", Sdf.ValueTypeNames.TexCoord2fArray, UsdGeom.Tokens.faceVarying)
    st.Set(Vt.Vec2fArray.FromNumpy(np.concatenate(uvs).astype(np.float32)))
    mesh.CreateExtentAttr(UsdGeom.Boundable.ComputeExtentFromPlugins(mesh, Usd.TimeCode.Default()))
    return mesh


def noise_png(path, side, seed):
    rng = np.random.default_rng(seed)
    Image.fromarray(rng.integers(0, 256, (side, side, 3), dtype=np.uint8), "RGB").save(path, compress_level=1)


def elements(room, objects, rng):
    w, d = room
    corners = [(-w / 2, -d / 2), (w / 2, -d / 2), (w / 2, d / 2), (-w / 2, d / 2)]
    out = room_shell([(corners[i], corners[(i + 1) % 4]) for i in range(4)], w, d)
    counts = {}
    for k in range(objects):
        category = CATEGORIES[k % len(CATEGORIES)]
        size = (rng.uniform(0.4, 1.8), rng.uniform(0.4, 1.8), rng.uniform(0.3, 1.2))
        x, z = rng.uniform(-w / 2 + 0.8, w / 2 - 0.8), rng.uniform(-d / 2 + 0.8, d / 2 - 0.8)
        out.append(room_object(category, rng.choice([0, 90, 180, -90]), x, z, size, counts))
    return out


def build(folder, name, scale):
    room, objects, n, texture_count, side = SCALES[scale]
    rng = random.Random(17)
    os.makedirs(os.path.join(folder, "assets"))
    os.makedirs(os.path.join(folder, "textures"))
    textures = []
    for t in range(texture_count):
        textures.append(f"textures/tex{t}.png")
        noise_png(os.path.join(folder, textures[-1]), side, t)
    root = Usd.Stage.CreateNew(os.path.join(folder, "Room.usda"))
    UsdGeom.SetStageUpAxis(root, UsdGeom.Tokens.y)
    UsdGeom.SetStageMetersPerUnit(root, 1.0)
    root.SetDefaultPrim(root.DefinePrim("/Room"))
    captured = {"version": 2, "story": 0, "coreModel": "AAAA", "referenceOriginTransform": list(range(16)),
                "sections": [{"label": "livingRoom", "story": 0, "center": [0, 0, 0]}],
                "walls": [], "doors": [], "windows": [], "openings": [], "floors": [], "objects": []}
    meshes = triangles = 0
    for k, (kind, category, elem, matrix, dims, size, parent) in enumerate(elements(room, objects, rng)):
        layer = element_layer(os.path.join(folder, "assets", f"{elem}.usdc"), elem, room_uuid(k), matrix)
        if kind == "objects":
            layer.DefinePrim(f"/{elem}/Geom_grp")
            mesh = grid_box(layer, f"/{elem}/Geom_grp/{elem}_body", (size[0], size[1] * 0.8, size[2]), (0, size[1] * 0.1, 0), n)
            grid_box(layer, f"/{elem}/Geom_grp/{elem}_base", (size[0] * 0.9, size[1] * 0.2, size[2] * 0.9), (0, -size[1] * 0.4, 0), n)
            meshes += 2
        else:
            mesh = grid_box(layer, f"/{elem}/{elem}_mesh", size, (0, 0, 0), n)
            meshes += 1
        bind(mesh.GetPrim(), textured_material(layer, f"/{elem}/Looks/Surface", "../" + textures[k % len(textures)]))
        layer.GetRootLayer().Save()
        reference_element(root, kind, category, elem, f"./assets/{elem}.usdc")
        entry = captured_entry(k, category, dims, matrix, parent)
        if kind != "objects":
            entry["polygonCorners"] = []
            entry["completedEdges"] = []
            entry["curve"] = None
        else:
            entry["attributes"] = {}
        captured[kind].append(entry)
    triangles = sum(2 * 6 * n * n for _ in range(meshes))
    root.GetRootLayer().Save()
    return os.path.join(folder, "Room.usda"), captured, meshes, triangles, texture_count


def main():
    import json
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    scales = sys.argv[2:] or list(SCALES)
    for scale in scales:
        work = tempfile.mkdtemp()
        try:
            root, captured, meshes, triangles, textures = build(os.path.join(work, scale), f"scan_{scale}", scale)
            usdz = os.path.join(out, f"scan_{scale}.usdz")
            if not UsdUtils.CreateNewUsdzPackage(Sdf.AssetPath(root), usdz):
                sys.exit(f"packaging {scale} failed")
            with open(os.path.join(out, f"scan_{scale}.roomplan.json"), "w") as f:
                json.dump(captured, f)
            print(f"scan_{scale} {os.path.getsize(usdz)} {meshes} {triangles} {textures}")
        finally:
            shutil.rmtree(work)


if __name__ == "__main__":
    main()
