#!/usr/bin/env python3
"""Independent readers of the GLBs the RoomScan tests write.

Usage: check_glb.py EXPECTATIONS.json — a list of {"file", "triangles", "min", "max"}.
Loads each file with pygltflib (structure: header, chunks, accessor min/max, embedded
images) and trimesh (geometry: triangle count, world box) and prints one JSON line per
file: {"file", "ok", "problems": [...]}.
"""
import json
import sys

import numpy
import pygltflib
import trimesh


def check(item):
    problems = []
    path = item["file"]
    data = open(path, "rb").read()
    if data[:4] != b"glTF" or int.from_bytes(data[8:12], "little") != len(data):
        problems.append("bad header")
    gltf = pygltflib.GLTF2().load_binary(path)
    blob = gltf.binary_blob()
    for accessor in gltf.accessors:
        view = gltf.bufferViews[accessor.bufferView]
        if (view.byteOffset or 0) % 4:
            problems.append("unaligned buffer view")
    for image in gltf.images:
        view = gltf.bufferViews[image.bufferView]
        head = blob[view.byteOffset:view.byteOffset + 4]
        if image.mimeType == "image/png" and head != b"\x89PNG":
            problems.append("image is not a PNG")
        if image.mimeType == "image/jpeg" and head[:2] != b"\xff\xd8":
            problems.append("image is not a JPEG")
    if len(gltf.images) != item.get("images", len(gltf.images)):
        problems.append(f"{len(gltf.images)} images, expected {item['images']}")
    scene = trimesh.load(path, force="scene", process=False)
    triangles = sum(len(g.faces) for g in scene.dump())
    if triangles != item["triangles"]:
        problems.append(f"{triangles} triangles, expected {item['triangles']}")
    low, high = scene.bounds
    if not (numpy.allclose(low, item["min"], atol=1e-4) and numpy.allclose(high, item["max"], atol=1e-4)):
        problems.append(f"box {list(low)} {list(high)}, expected {item['min']} {item['max']}")
    return {"file": path, "ok": not problems, "problems": problems}


if __name__ == "__main__":
    for item in json.load(open(sys.argv[1])):
        print(json.dumps(check(item)))
