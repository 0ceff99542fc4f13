#!/usr/bin/env python3
"""The transcode a team would write without RoomScan, for the transcode benchmark.

`python_pipeline.py PACKAGE ROOMPLAN [RUNS]` does RoomTranscoder's job with usd-core,
trimesh and Pillow, RUNS times (default 3), each into a fresh directory:
read the stage, world boxes of the drawn meshes via UsdGeom.BBoxCache, layers by the same
rule (customData Category, else a word of the prim's name), one GLB per layer exported by
trimesh (world-space, Y-up metres, fan-triangulated, every face corner its own vertex,
face-varying normals and UVs, the bound PNG/JPEG as base-colour texture), a 512×512 plan
thumbnail from roomplan.json with Pillow (PNG and WebP q80), and a manifest JSON with the
checksums, bounds and counts. Prints one line per run and
`python <package bytes> median=<s> min=<s> runs=<n> layers=<n> triangles=<n>`; times are
wall clock around one transcode (the interpreter start and imports are not counted).

trimesh's GLB export re-encodes every embedded texture as PNG with Pillow (it keeps only
JPEGs as they are), which is most of this pipeline's time on textured packages. With
`--keep-texture-bytes` (after the positional arguments) its `_append_image` is replaced by
one that embeds the package's PNG/JPEG bytes unchanged, as RoomTranscoder does: the variant a
team would reach after profiling, reported beside the plain one.
"""
import hashlib
import io
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
import zipfile

import numpy as np
import trimesh
from PIL import Image, ImageDraw
from pxr import Usd, UsdGeom, UsdShade

CATEGORIES = ["storage", "refrigerator", "stove", "bed", "sink", "washerDryer", "toilet", "bathtub", "oven",
              "dishwasher", "table", "sofa", "chair", "fireplace", "television", "stairs"]
WORDS = {"wall": "walls", "door": "doors", "window": "windows", "opening": "openings", "floor": "floors"}
WORDS.update({c.lower(): c for c in CATEGORIES})


def layer_of_name(name):
    for word in name.split("_"):
        word = word.rstrip("0123456789").lower()
        if word in WORDS:
            return WORDS[word]
    return None


def layer_of(prim):
    while prim and not prim.IsPseudoRoot():
        category = prim.GetCustomDataByKey("Category")
        if isinstance(category, str) and category.lower() in WORDS:
            return WORDS[category.lower()]
        found = layer_of_name(prim.GetName())
        if found:
            return found
        prim = prim.GetParent()
    return "other"


def texture_of(prim, package_zip):
    material, _ = UsdShade.MaterialBindingAPI(prim).ComputeBoundMaterial()
    if not material:
        return None, None
    for shader_prim in Usd.PrimRange(material.GetPrim()):
        shader = UsdShade.Shader(shader_prim)
        if not shader or shader.GetIdAttr().Get() != "UsdUVTexture":
            continue
        value = shader.GetInput("file").Get()
        resolved = value.resolvedPath if value is not None else ""
        if "[" in resolved and resolved.endswith("]"):
            entry = resolved[resolved.rindex("[") + 1:-1]
            if entry.lower().endswith((".png", ".jpg", ".jpeg")):
                data = package_zip.read(entry)
                image = Image.open(io.BytesIO(data))
                image.package_bytes = data  # for --keep-texture-bytes
                return entry, image
    return None, None


def mesh_geometry(mesh, world, to_gltf):
    points = np.asarray(mesh.GetPointsAttr().Get(), dtype=np.float64)
    counts = np.asarray(mesh.GetFaceVertexCountsAttr().Get(), dtype=np.int64)
    indices = np.asarray(mesh.GetFaceVertexIndicesAttr().Get(), dtype=np.int64)
    keep = indices < len(points)
    starts = np.concatenate([[0], np.cumsum(counts)[:-1]])
    good = np.add.reduceat(keep.astype(np.int64), starts) == counts if len(counts) else np.zeros(0, bool)
    tris = []
    for k in range(1, int(counts.max(initial=2)) - 1):  # fan: (s, s+k, s+k+1) for faces with count > k+1
        sel = good & (counts > k + 1)
        s = starts[sel]
        tris.append(np.stack([s, s + k, s + k + 1], axis=1))
    faces = np.concatenate(tris) if tris else np.zeros((0, 3), np.int64)
    matrix = np.asarray(world) @ to_gltf
    corners = np.c_[points[np.minimum(indices, len(points) - 1)], np.ones(len(indices))] @ matrix
    n_corners, n_faces = len(indices), len(counts)

    def per_corner(values):
        values = np.asarray(values)
        if len(values) == n_corners:
            return values
        if len(values) == len(points):
            return values[np.minimum(indices, len(points) - 1)]
        if len(values) == n_faces:
            return np.repeat(values, counts, axis=0)
        if len(values) == 1:
            return np.repeat(values, n_corners, axis=0)
        return None

    normals = mesh.GetNormalsAttr().Get()
    normals = per_corner(normals) if normals is not None else None
    if normals is not None:
        normals = normals @ matrix[:3, :3]
        normals /= np.maximum(np.linalg.norm(normals, axis=1, keepdims=True), 1e-12)
    st = UsdGeom.PrimvarsAPI(mesh).GetPrimvar("st")
    uv = per_corner(st.Get()) if st and st.HasValue() else None
    if uv is not None:
        uv = np.c_[uv[:, 0], 1.0 - uv[:, 1]]
    return corners[:, :3], faces, normals, uv, len(points)


def thumbnail(room, out):
    image = Image.new("RGB", (512, 512), "white")
    draw = ImageDraw.Draw(image)
    items = []
    for kind in ("walls", "doors", "windows", "openings", "objects"):
        for element in room.get(kind, []):
            t, d = element["transform"], element["dimensions"]
            items.append((kind, element, t, d))
    xs = [t[12] for _, _, t, _ in items] or [0]
    zs = [t[14] for _, _, t, _ in items] or [0]
    reach = max(max(d[0] for *_, d in items) / 2 if items else 1, 0.5)
    lo_x, hi_x, lo_z, hi_z = min(xs) - reach, max(xs) + reach, min(zs) - reach, max(zs) + reach
    scale = 480 / max(hi_x - lo_x, hi_z - lo_z)

    def at(x, z):
        return (16 + (x - lo_x) * scale, 16 + (z - lo_z) * scale)
    colours = {"walls": (40, 40, 40), "doors": (230, 130, 30), "windows": (40, 110, 220), "openings": (255, 255, 255)}
    for kind, element, t, d in items:
        ax, az = t[0], t[2]
        cx, cz = t[12], t[14]
        if kind == "objects":
            bx, bz = t[8], t[10]
            hw, hd = d[0] / 2, d[2] / 2
            poly = [at(cx + sx * hw * ax + sz * hd * bx, cz + sx * hw * az + sz * hd * bz)
                    for sx, sz in ((-1, -1), (1, -1), (1, 1), (-1, 1))]
            draw.polygon(poly, outline=(90, 90, 90), fill=(225, 225, 225))
            draw.text(at(cx, cz), next(iter(element["category"])), fill=(0, 0, 0))
        else:
            half = d[0] / 2
            draw.line([at(cx - ax * half, cz - az * half), at(cx + ax * half, cz + az * half)],
                      fill=colours[kind], width=6 if kind == "walls" else 4)
    image.save(os.path.join(out, "thumbnail.png"))
    image.save(os.path.join(out, "thumbnail.webp"), quality=80)


def transcode(package, roomplan, out):
    with open(package, "rb") as f:
        package_sha = hashlib.sha256(f.read()).hexdigest()
    with open(roomplan, "rb") as f:
        room_bytes = f.read()
    room = json.loads(room_bytes)
    stage = Usd.Stage.Open(package)
    package_zip = zipfile.ZipFile(package)
    up = UsdGeom.GetStageUpAxis(stage)
    mpu = UsdGeom.GetStageMetersPerUnit(stage)
    to_gltf = np.diag([mpu, mpu, mpu, 1.0])
    if up == UsdGeom.Tokens.z:
        to_gltf = to_gltf @ np.array([[1, 0, 0, 0], [0, 0, -1, 0], [0, 1, 0, 0], [0, 0, 0, 1]], dtype=np.float64)
    bbox = UsdGeom.BBoxCache(Usd.TimeCode.Default(), ["default", "render"], useExtentsHint=False)
    xforms = UsdGeom.XformCache()
    layers = {}
    for prim in stage.Traverse():
        if not prim.IsA(UsdGeom.Mesh):
            continue
        if UsdGeom.Imageable(prim).ComputeVisibility() == UsdGeom.Tokens.invisible:
            continue
        layers.setdefault(layer_of(prim), []).append(prim)
    os.makedirs(os.path.join(out, "layers"))
    manifest_layers, textures_cache = [], {}
    for name, prims in sorted(layers.items()):
        scene = trimesh.Scene()
        box = None
        triangles = points_total = 0
        used = []
        for prim in prims:
            world_box = bbox.ComputeWorldBound(prim).ComputeAlignedRange()
            if not world_box.IsEmpty():
                lo, hi = np.array(world_box.GetMin()), np.array(world_box.GetMax())
                box = (lo, hi) if box is None else (np.minimum(box[0], lo), np.maximum(box[1], hi))
            vertices, faces, normals, uv, n_points = mesh_geometry(
                UsdGeom.Mesh(prim), xforms.GetLocalToWorldTransform(prim), to_gltf)
            entry, image = texture_of(prim, package_zip)
            if entry is not None:
                if entry not in textures_cache:
                    textures_cache[entry] = image
                used.append(entry)
            visual = None
            if uv is not None and entry is not None:
                material = trimesh.visual.material.PBRMaterial(baseColorTexture=textures_cache[entry])
                visual = trimesh.visual.TextureVisuals(uv=uv, material=material)
            geometry = trimesh.Trimesh(vertices=vertices, faces=faces, vertex_normals=normals, visual=visual, process=False)
            path = str(prim.GetPath())
            scene.add_geometry(geometry, node_name=path, geom_name=path)
            triangles += len(faces)
            points_total += n_points
        glb = scene.export(file_type="glb")
        key = f"layers/{name}.glb"
        with open(os.path.join(out, key), "wb") as f:
            f.write(glb)
        manifest_layers.append({"name": name, "glbKey": key, "glbBytes": len(glb),
                                "primPaths": [str(p.GetPath()) for p in prims], "meshCount": len(prims),
                                "triangleCount": triangles, "sourcePointCount": points_total,
                                "worldBounds": None if box is None else {"min": box[0].tolist(), "max": box[1].tolist()},
                                "textures": sorted(set(used))})
    thumbnail(room, out)
    manifest = {"package": {"sha256": package_sha, "bytes": os.path.getsize(package), "upAxis": up, "metersPerUnit": mpu},
                "roomPlan": {"sha256": hashlib.sha256(room_bytes).hexdigest(), "bytes": len(room_bytes)},
                "layers": manifest_layers,
                "thumbnails": [{"format": f, "key": f"thumbnail.{f}", "bytes": os.path.getsize(os.path.join(out, f"thumbnail.{f}"))}
                               for f in ("png", "webp")]}
    with open(os.path.join(out, "layer_manifest.json"), "w") as f:
        json.dump(manifest, f)
    return manifest_layers


def keep_texture_bytes():
    """Makes trimesh embed a texture's package bytes instead of re-encoding the image."""
    from trimesh.exchange import gltf
    reencode = gltf._append_image

    def append_image(img, tree, buffer_items, extension_webp):
        data = getattr(img, "package_bytes", None)
        if data is None or extension_webp or img.format not in ("PNG", "JPEG"):
            return reencode(img, tree, buffer_items, extension_webp)
        index = gltf._buffer_append(buffer_items, data)
        tree["images"].append({"bufferView": index, "mimeType": f"image/{img.format.lower()}"})
        return len(tree["images"]) - 1
    gltf._append_image = append_image


def main():
    arguments = [a for a in sys.argv[1:] if a != "--keep-texture-bytes"]
    if len(arguments) != len(sys.argv) - 1:
        keep_texture_bytes()
    package, roomplan = arguments[0], arguments[1]
    runs = int(arguments[2]) if len(arguments) > 2 else 3
    scratch = tempfile.mkdtemp(prefix="python-transcode-")
    seconds = []
    try:
        for run in range(runs):
            out = os.path.join(scratch, f"run{run}")
            os.makedirs(out)
            start = time.perf_counter()
            layers = transcode(package, roomplan, out)
            seconds.append(time.perf_counter() - start)
            print(f"run {run + 1}: {seconds[-1]:.3f} s", flush=True)
            shutil.rmtree(out)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    print(f"python {os.path.getsize(package)} median={statistics.median(seconds):.4f} min={min(seconds):.4f} runs={runs} "
          f"layers={len(layers)} triangles={sum(l['triangleCount'] for l in layers)}")


if __name__ == "__main__":
    main()
