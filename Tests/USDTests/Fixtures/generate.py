#!/usr/bin/env python3
"""Generates the USD reader's test fixtures and their expectations with Pixar's usd-core.

This script is the source of truth: rerun it (`pip install usd-core Pillow`, then
`python3 Tests/USDTests/Fixtures/generate.py`) and commit the outputs. For every package
it writes `<name>.usdz` and `<name>.expected.json` with what usd-core computes: traversed
prim paths and types, world bounds from UsdGeom.BBoxCache, mesh vertex/triangle counts,
bound textures, upAxis and metersPerUnit. Malformed packages get the finding or error
code the reader must report.
"""
import json
import math
import os
import shutil
import struct
import sys
import tempfile
import zipfile
import zlib

from pxr import Gf, Kind, Sdf, Usd, UsdGeom, UsdShade, UsdUtils, Vt

HERE = os.path.dirname(os.path.abspath(__file__))


def tiny_png(rgb):
    """A valid 1x1 PNG of one colour."""
    def chunk(kind, data):
        body = kind + data
        return struct.pack(">I", len(data)) + body + struct.pack(">I", zlib.crc32(body) & 0xFFFFFFFF)
    raw = b"\x00" + bytes(rgb)
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", 1, 1, 8, 2, 0, 0, 0))
            + chunk(b"IDAT", zlib.compress(raw)) + chunk(b"IEND", b""))


def grid_mesh(stage, path, nx, ny, size=1.0, z=0.0, author_extent=True):
    """A quad grid: (nx+1)*(ny+1) points, nx*ny quads; big grids make crate compress arrays."""
    mesh = UsdGeom.Mesh.Define(stage, path)
    points, counts, indices, st = [], [], [], []
    for j in range(ny + 1):
        for i in range(nx + 1):
            points.append(Gf.Vec3f(size * i / nx, size * j / ny, z + 0.01 * ((i * 7 + j * 3) % 5)))
            st.append(Gf.Vec2f(i / nx, j / ny))
    for j in range(ny):
        for i in range(nx):
            a = j * (nx + 1) + i
            counts.append(4)
            indices.extend([a, a + 1, a + nx + 2, a + nx + 1])
    mesh.CreatePointsAttr(Vt.Vec3fArray(points))
    mesh.CreateFaceVertexCountsAttr(Vt.IntArray(counts))
    mesh.CreateFaceVertexIndicesAttr(Vt.IntArray(indices))
    mesh.CreateNormalsAttr(Vt.Vec3fArray([Gf.Vec3f(0, 0, 1)] * len(points)))
    mesh.SetNormalsInterpolation(UsdGeom.Tokens.vertex)
    primvar = UsdGeom.PrimvarsAPI(mesh).CreatePrimvar("st", Sdf.ValueTypeNames.TexCoord2fArray, UsdGeom.Tokens.vertex)
    primvar.Set(Vt.Vec2fArray(st))
    if author_extent:
        mesh.CreateExtentAttr(UsdGeom.Boundable.ComputeExtentFromPlugins(mesh, Usd.TimeCode.Default()))
    return mesh


def ngon_mesh(stage, path):
    """A pentagon, a hexagon and a triangle sharing no points; no extent authored."""
    mesh = UsdGeom.Mesh.Define(stage, path)
    pts = [(0, 0, 0), (1, 0, 0), (1.3, 0.8, 0), (0.5, 1.4, 0.2), (-0.3, 0.8, 0),
           (2, 0, 0), (3, 0, 0.5), (3.5, 1, 0), (3, 2, -0.5), (2, 2, 0), (1.5, 1, 0),
           (0, 3, 1), (1, 3, 1), (0.5, 4, 1.5)]
    mesh.CreatePointsAttr([Gf.Vec3f(*p) for p in pts])
    mesh.CreateFaceVertexCountsAttr([5, 6, 3])
    mesh.CreateFaceVertexIndicesAttr(list(range(14)))
    return mesh


def textured_material(stage, path, texture):
    material = UsdShade.Material.Define(stage, path)
    surface = UsdShade.Shader.Define(stage, path + "/Surface")
    surface.CreateIdAttr("UsdPreviewSurface")
    reader = UsdShade.Shader.Define(stage, path + "/Diffuse")
    reader.CreateIdAttr("UsdUVTexture")
    reader.CreateInput("file", Sdf.ValueTypeNames.Asset).Set(texture)
    reader.CreateOutput("rgb", Sdf.ValueTypeNames.Float3)
    surface.CreateInput("diffuseColor", Sdf.ValueTypeNames.Color3f).ConnectToSource(reader.ConnectableAPI(), "rgb")
    material.CreateSurfaceOutput().ConnectToSource(surface.ConnectableAPI(), "surface")
    return material


def bind(prim, material):
    UsdShade.MaterialBindingAPI.Apply(prim).Bind(material)


SMALL_LAYER = b"""#usda 1.0
(
    defaultPrim = "World"
)
def Xform "World"
{
    def Mesh "Quad"
    {
        int[] faceVertexCounts = [4]
        int[] faceVertexIndices = [0, 1, 2, 3]
        point3f[] points = [(0, 0, 0), (1, 0, 0), (1, 1, 0), (0, 1, 0)]
    }
}
"""


def build_basic(stage):
    """Nested xforms with every op type, quads and n-gons, a textured material."""
    UsdGeom.SetStageUpAxis(stage, UsdGeom.Tokens.z)
    UsdGeom.SetStageMetersPerUnit(stage, 1.0)
    world = UsdGeom.Xform.Define(stage, "/World")
    stage.SetDefaultPrim(world.GetPrim())
    world.AddTranslateOp().Set(Gf.Vec3d(1, 2, 3))
    world.AddRotateXYZOp().Set(Gf.Vec3f(10, 20, 30))
    world.AddScaleOp().Set(Gf.Vec3f(2, 2, 2))

    ops = UsdGeom.Xform.Define(stage, "/World/Ops")
    ops.AddTranslateOp(opSuffix="pivot").Set(Gf.Vec3d(0.5, 0.5, 0))
    ops.AddRotateZYXOp().Set(Gf.Vec3f(15, -25, 40))
    ops.AddTranslateOp(opSuffix="pivot", isInverseOp=True)
    ops.AddOrientOp().Set(Gf.Quatf(0.9238795, 0.0, 0.3826834, 0.0))
    quad = grid_mesh(stage, "/World/Ops/Quad", 1, 1)
    quad.AddRotateXOp().Set(30.0)
    quad.AddRotateYOp().Set(-45.0)
    quad.AddRotateZOp().Set(60.0)
    for name, order in [("XZY", UsdGeom.XformOp.TypeRotateXZY), ("YXZ", UsdGeom.XformOp.TypeRotateYXZ),
                        ("YZX", UsdGeom.XformOp.TypeRotateYZX), ("ZXY", UsdGeom.XformOp.TypeRotateZXY)]:
        child = grid_mesh(stage, "/World/Ops/Rot" + name, 2, 1)
        child.AddXformOp(order).Set(Gf.Vec3f(33, -12, 71))
        child.AddTranslateOp().Set(Gf.Vec3d(0.1, 0.2, 0.3))

    group = UsdGeom.Xform.Define(stage, "/World/Group")
    matrix = Gf.Matrix4d().SetRotate(Gf.Rotation(Gf.Vec3d(1, 1, 0), 35)) * Gf.Matrix4d().SetTranslate(Gf.Vec3d(-4, 0, 1))
    group.AddTransformOp().Set(matrix)
    ngon = ngon_mesh(stage, "/World/Group/Ngon")
    ngon.AddScaleOp(opSuffix="squash").Set(Gf.Vec3f(1, 0.5, 2))
    reset = UsdGeom.Xform.Define(stage, "/World/Group/Reset")
    reset.SetResetXformStack(True)
    reset.AddTranslateOp().Set(Gf.Vec3d(10, 0, 0))
    grid_mesh(stage, "/World/Group/Reset/Tri", 1, 1)

    component = UsdGeom.Xform.Define(stage, "/World/Component")
    Usd.ModelAPI(component.GetPrim()).SetKind(Kind.Tokens.component)
    component.AddRotateYOp().Set(30.0)
    part = grid_mesh(stage, "/World/Component/Part", 1, 1)
    part.AddRotateZOp().Set(45.0)
    part.AddTranslateOp().Set(Gf.Vec3d(1, 0, 0))

    big = grid_mesh(stage, "/World/Big", 20, 15, size=5.0)
    big.AddTranslateOp().Set(Gf.Vec3d(0, -6, 0))
    cube = UsdGeom.Cube.Define(stage, "/World/Cube")
    cube.CreateSizeAttr(3.0)
    cube.AddTranslateOp().Set(Gf.Vec3d(0, 0, -5))
    hidden = grid_mesh(stage, "/World/Hidden", 1, 1, z=100)
    hidden.CreateVisibilityAttr(UsdGeom.Tokens.invisible)
    guide = grid_mesh(stage, "/World/Guide", 1, 1, z=-100)
    guide.CreatePurposeAttr(UsdGeom.Tokens.guide)
    UsdGeom.Scope.Define(stage, "/World/Looks")
    material = textured_material(stage, "/World/Looks/Wood", "textures/wood.png")
    bind(quad.GetPrim(), material)
    bind(big.GetPrim(), material)
    stage.CreateClassPrim("/_class_Thing")
    stage.OverridePrim("/OverOnly")
    inactive = UsdGeom.Xform.Define(stage, "/World/Inactive")
    grid_mesh(stage, "/World/Inactive/Gone", 1, 1)
    inactive.GetPrim().SetActive(False)


ROOMPLAN_CATEGORIES = [("Wall", "Arch_grp", "Wall_{i}_grp", "Wall{i}"), ("Floor", "Floor_grp", None, "Floor{i}"),
                       ("Storage", "Object_grp", "Storage_grp", "Storage{i}"), ("Table", "Object_grp", "Table_grp", "Table{i}")]


def build_roomplan(folder):
    """A RoomPlan-like export: one layer per element under assets/, pulled in by references."""
    os.makedirs(os.path.join(folder, "assets"), exist_ok=True)
    os.makedirs(os.path.join(folder, "textures"), exist_ok=True)
    with open(os.path.join(folder, "textures", "oak.png"), "wb") as f:
        f.write(tiny_png((150, 110, 60)))
    root = Usd.Stage.CreateNew(os.path.join(folder, "Room.usda"))
    UsdGeom.SetStageUpAxis(root, UsdGeom.Tokens.y)
    UsdGeom.SetStageMetersPerUnit(root, 1.0)
    room = UsdGeom.Xform.Define(root, "/Room")
    root.SetDefaultPrim(room.GetPrim())
    Usd.ModelAPI(room.GetPrim()).SetKind(Kind.Tokens.assembly)
    elements = [("Wall", 0), ("Wall", 1), ("Wall", 2), ("Floor", 0), ("Storage", 0), ("Table", 0)]
    for n, (category, index) in enumerate(elements):
        spec = next(c for c in ROOMPLAN_CATEGORIES if c[0] == category)
        name = spec[3].format(i=index)
        ext = "usdc" if n % 2 else "usda"
        asset = os.path.join(folder, "assets", f"{name}.{ext}")
        layer = Usd.Stage.CreateNew(asset)
        UsdGeom.SetStageUpAxis(layer, UsdGeom.Tokens.y)
        element = UsdGeom.Xform.Define(layer, "/" + name)
        layer.SetDefaultPrim(element.GetPrim())
        element.GetPrim().SetCustomDataByKey("Category", category)
        element.GetPrim().SetCustomDataByKey("UUID", "8C1B%04d-6F0A-4C8B-9E2D-1F3A5B7C9D%02d" % (n, n))
        if category == "Storage":
            Usd.ModelAPI(element.GetPrim()).SetKind(Kind.Tokens.component)
        angle = 90.0 * index + (30 if category in ("Storage", "Table") else 0)
        xf = Gf.Matrix4d().SetRotate(Gf.Rotation(Gf.Vec3d(0, 1, 0), angle)) * Gf.Matrix4d().SetTranslate(
            Gf.Vec3d(2.0 * index - 1, 0 if category != "Floor" else -0.01, 1.5 * (n % 3)))
        element.AddTransformOp().Set(xf)
        if category == "Wall":
            mesh = grid_mesh(layer, f"/{name}/{name}_mesh", 4, 3, size=3.0)
        elif category == "Floor":
            mesh = grid_mesh(layer, f"/{name}/{name}_mesh", 6, 6, size=4.0)
            mesh.AddRotateXOp().Set(-90.0)
        else:
            mesh = ngon_mesh(layer, f"/{name}/{name}_mesh")
            mesh.AddScaleOp().Set(Gf.Vec3f(0.5, 0.5, 0.5))
            if category == "Storage":
                inner = grid_mesh(layer, f"/{name}/Shelf", 2, 2, size=0.8)
                inner.AddRotateXYZOp().Set(Gf.Vec3f(20, 45, 10))
        if category == "Table":
            material = textured_material(layer, f"/{name}/Looks/Oak", "../textures/oak.png")
            bind(mesh.GetPrim(), material)
        layer.GetRootLayer().Save()
        group_path = "/Room/" + spec[1]
        UsdGeom.Xform.Define(root, group_path)
        if spec[2]:
            group_path += "/" + spec[2].format(i=index)
            UsdGeom.Xform.Define(root, group_path)
        holder = UsdGeom.Xform.Define(root, f"{group_path}/{name}")
        if category == "Floor":
            holder.GetPrim().GetPayloads().AddPayload(f"./assets/{name}.{ext}")
        else:
            holder.GetPrim().GetReferences().AddReference(f"./assets/{name}.{ext}")
    root.GetRootLayer().Save()
    return os.path.join(folder, "Room.usda")


# A RoomPlan-shaped scan: untyped `def` groups (`/Room/Parametric_grp/Object_grp/…`), one
# layer per element (usda and usdc) pulled in by references, objects of several of the 16
# categories whose meshes sit under an untyped group, textures (PNG and JPEG), and the
# matching CapturedRoom JSON written next to the package as `<name>.roomplan.json`.
ROOM_WALLS = [((-2.5, -2.0), (2.5, -2.0)), ((2.5, -2.0), (2.5, 2.0)), ((2.5, 2.0), (-2.5, 2.0)), ((-2.5, 2.0), (-2.5, -2.0))]
ROOM_OBJECTS = [("table", 0.0, 0.0, 0, (1.6, 0.75, 0.9)), ("chair", -1.0, 0.0, 90, (0.5, 0.9, 0.5)),
                ("chair", 1.0, 0.0, -90, (0.5, 0.9, 0.5)), ("chair", 0.0, 0.8, 180, (0.5, 0.9, 0.5)),
                ("sofa", -1.5, 1.4, 180, (2.0, 0.8, 0.9)), ("bed", 1.6, 1.0, 90, (1.6, 0.5, 2.0)),
                ("storage", -2.2, -1.0, 90, (1.2, 1.8, 0.4)), ("storage", -2.2, 0.4, 90, (0.8, 1.0, 0.4)),
                ("television", 0.0, 1.9, 180, (1.2, 0.7, 0.1)), ("refrigerator", 2.1, -1.6, -90, (0.7, 1.8, 0.7)),
                ("sink", 1.2, -1.7, 0, (0.6, 0.9, 0.5)), ("stove", 0.4, -1.7, 0, (0.6, 0.9, 0.6))]


def room_matrix(angle_degrees, x, y, z):
    return Gf.Matrix4d().SetRotate(Gf.Rotation(Gf.Vec3d(0, 1, 0), angle_degrees)) * Gf.Matrix4d().SetTranslate(Gf.Vec3d(x, y, z))


def box_mesh(stage, path, size, offset=(0, 0, 0)):
    """A box centred at `offset`: 8 points, 6 quads, face-varying normals and UVs."""
    mesh = UsdGeom.Mesh.Define(stage, path)
    w, h, d = (size[0] / 2, size[1] / 2, size[2] / 2)
    ox, oy, oz = offset
    pts = [Gf.Vec3f(ox + sx * w, oy + sy * h, oz + sz * d) for sz in (-1, 1) for sy in (-1, 1) for sx in (-1, 1)]
    faces = [([0, 2, 3, 1], (0, 0, -1)), ([4, 5, 7, 6], (0, 0, 1)), ([0, 1, 5, 4], (0, -1, 0)),
             ([2, 6, 7, 3], (0, 1, 0)), ([0, 4, 6, 2], (-1, 0, 0)), ([1, 3, 7, 5], (1, 0, 0))]
    mesh.CreatePointsAttr(Vt.Vec3fArray(pts))
    mesh.CreateFaceVertexCountsAttr(Vt.IntArray([4] * 6))
    mesh.CreateFaceVertexIndicesAttr(Vt.IntArray([i for f, _ in faces for i in f]))
    mesh.CreateNormalsAttr(Vt.Vec3fArray([Gf.Vec3f(*n) for _, n in faces for _ in range(4)]))
    mesh.SetNormalsInterpolation(UsdGeom.Tokens.faceVarying)
    st = UsdGeom.PrimvarsAPI(mesh).CreatePrimvar("st", Sdf.ValueTypeNames.TexCoord2fArray, UsdGeom.Tokens.faceVarying)
    st.Set(Vt.Vec2fArray([Gf.Vec2f(*uv) for _ in faces for uv in ((0, 0), (1, 0), (1, 1), (0, 1))]))
    mesh.CreateExtentAttr(UsdGeom.Boundable.ComputeExtentFromPlugins(mesh, Usd.TimeCode.Default()))
    return mesh


def tiny_jpeg(rgb):
    from PIL import Image
    import io
    out = io.BytesIO()
    Image.new("RGB", (8, 8), rgb).save(out, "JPEG")
    return out.getvalue()


def room_uuid(n):
    return "5E1A%04X-0C3D-4B7E-9A21-%012X" % (n, 0xC0FFEE000000 + n)


def room_shell(walls, width, depth):
    """A wall along each of `walls` (pairs of corners), a door, a window and an opening in the first
    three, and a `width` × `depth` floor: (kind, category, name, matrix, dimensions, mesh size,
    parent wall index) per element."""
    elements = []
    for i, ((x0, z0), (x1, z1)) in enumerate(walls):
        length = math.hypot(x1 - x0, z1 - z0)
        angle = math.degrees(math.atan2(-(z1 - z0), x1 - x0))
        elements.append(("walls", "wall", f"Wall{i}", room_matrix(angle, (x0 + x1) / 2, 1.25, (z0 + z1) / 2),
                         (length, 2.5, 0.0), (length, 2.5, 0.1), None))
    def on_wall(wall, along, y, angle):
        (x0, z0), (x1, z1) = walls[wall]
        return room_matrix(angle, x0 + (x1 - x0) * along, y, z0 + (z1 - z0) * along)
    elements.append(("doors", "door", "Door0", on_wall(0, 0.3, 1.0, 0), (0.9, 2.0, 0.0), (0.9, 2.0, 0.05), 0))
    elements.append(("windows", "window", "Window0", on_wall(1, 0.5, 1.5, -90), (1.2, 1.0, 0.0), (1.2, 1.0, 0.05), 1))
    elements.append(("openings", "opening", "Opening0", on_wall(2, 0.7, 1.0, 180), (1.0, 2.0, 0.0), (1.0, 2.0, 0.02), 2))
    elements.append(("floors", "floor", "Floor0", room_matrix(0, 0, 0, 0), (width, depth, 0.0), (width, 0.02, depth), None))
    return elements


def room_object(category, angle, x, z, size, counts):
    """An object element of `category`, named after it and how many came before it (`counts`)."""
    n = counts.get(category, 0)
    counts[category] = n + 1
    name = category[0].upper() + category[1:] + str(n)
    return ("objects", category, name, room_matrix(angle, x, size[1] / 2, z), size, size, None)


def room_elements(open_loop=False):
    """(kind, category, name, matrix, dimensions, mesh size, parent wall index) per element."""
    elements = room_shell(ROOM_WALLS[:3] if open_loop else ROOM_WALLS, 5.0, 4.0)
    counts = {}
    for category, x, z, angle, size in ROOM_OBJECTS:
        elements.append(room_object(category, angle, x, z, size, counts))
    return elements


def room_group(kind, category, name):
    if kind == "walls":
        return ["Parametric_grp", "Arch_grp", name.replace("Wall", "Wall_") + "_grp"]
    if kind in ("doors", "windows", "openings"):
        return ["Parametric_grp", "Arch_grp", kind[:-1].capitalize() + "_grp"]
    if kind == "floors":
        return ["Parametric_grp", "Floor_grp"]
    return ["Parametric_grp", "Object_grp", category[0].upper() + category[1:] + "_grp"]


def element_layer(path, name, uuid, matrix):
    """An element's own layer at `path`: the Xform `/name` (its default prim) with the element's
    UUID and transform."""
    layer = Usd.Stage.CreateNew(path)
    UsdGeom.SetStageUpAxis(layer, UsdGeom.Tokens.y)
    element = UsdGeom.Xform.Define(layer, "/" + name)
    layer.SetDefaultPrim(element.GetPrim())
    element.GetPrim().SetCustomDataByKey("UUID", uuid)
    element.AddTransformOp().Set(matrix)
    return layer


def reference_element(root, kind, category, name, asset):
    """`asset` referenced from the scan's root layer at `/Room/<RoomPlan's groups>/name`."""
    path = "/Room"
    for group in room_group(kind, category, name):
        path += "/" + group
        root.DefinePrim(path)
    root.DefinePrim(f"{path}/{name}").GetReferences().AddReference(asset)


def captured_entry(n, category, dims, matrix, parent, confidence="high"):
    """Element `n`'s CapturedRoom entry: identifier, category, confidence, dimensions, transform,
    story and, for an opening in a wall, the wall's identifier."""
    entry = {"identifier": room_uuid(n), "category": {category: {"isOpen": False} if category == "door" else {}},
             "confidence": {confidence: {}}, "dimensions": list(dims), "transform": [v for row in matrix for v in row],
             "story": 0}
    if parent is not None:
        entry["parentIdentifier"] = room_uuid(parent)
    return entry


def build_roomscan(folder, open_loop=False, confidences=None):
    """Writes the scan's layers under `folder`; returns (root layer path, CapturedRoom dict)."""
    os.makedirs(os.path.join(folder, "assets"), exist_ok=True)
    os.makedirs(os.path.join(folder, "textures"), exist_ok=True)
    with open(os.path.join(folder, "textures", "floor.png"), "wb") as f:
        f.write(tiny_png((200, 180, 150)))
    with open(os.path.join(folder, "textures", "fabric.jpg"), "wb") as f:
        f.write(tiny_jpeg((60, 90, 160)))
    root = Usd.Stage.CreateNew(os.path.join(folder, "Room.usda"))
    UsdGeom.SetStageUpAxis(root, UsdGeom.Tokens.y)
    UsdGeom.SetStageMetersPerUnit(root, 1.0)
    room = root.DefinePrim("/Room")
    root.SetDefaultPrim(room)
    captured = {"version": 2, "story": 0, "coreModel": "AAAA", "referenceOriginTransform": list(range(16)),
                "sections": [{"label": "livingRoom", "story": 0, "center": [0, 0, 0]}],
                "walls": [], "doors": [], "windows": [], "openings": [], "floors": [], "objects": [],
                "futureKey": {"ignored": True}}
    elements = room_elements(open_loop)
    for n, (kind, category, name, matrix, dims, size, parent) in enumerate(elements):
        ext = "usdc" if n % 2 else "usda"
        layer = element_layer(os.path.join(folder, "assets", f"{name}.{ext}"), name, room_uuid(n), matrix)
        if kind == "objects":
            # The object's meshes under an untyped group inside the Xform.
            layer.DefinePrim(f"/{name}/Geom_grp")
            mesh = box_mesh(layer, f"/{name}/Geom_grp/{name}_body", (size[0], size[1] * 0.8, size[2]), (0, size[1] * 0.1, 0))
            box_mesh(layer, f"/{name}/Geom_grp/{name}_base", (size[0] * 0.9, size[1] * 0.2, size[2] * 0.9), (0, -size[1] * 0.4, 0))
        else:
            mesh = box_mesh(layer, f"/{name}/{name}_mesh", size)
        texture = {"floors": "../textures/floor.png", "sofa": "../textures/fabric.jpg"}.get(kind if kind == "floors" else category)
        if texture:
            bind(mesh.GetPrim(), textured_material(layer, f"/{name}/Looks/Surface", texture))
        layer.GetRootLayer().Save()
        reference_element(root, kind, category, name, f"./assets/{name}.{ext}")
        entry = captured_entry(n, category, dims, matrix, parent,
                               confidences[n] if confidences and n < len(confidences) else "high")
        if kind in ("walls", "doors", "windows", "openings", "floors"):
            entry["polygonCorners"] = [] if kind != "floors" else [[-2.5, 2.0, 0], [2.5, 2.0, 0], [2.5, -2.0, 0], [-2.5, -2.0, 0]]
            entry["completedEdges"] = []
            entry["curve"] = None
        else:
            entry["attributes"] = {"ChairType": "dining"} if category == "chair" else {}
        captured[kind].append(entry)
    root.GetRootLayer().Save()
    return os.path.join(folder, "Room.usda"), captured


def write_roomplan(name, captured):
    with open(os.path.join(HERE, name + ".roomplan.json"), "w") as f:
        json.dump(captured, f, indent=1)
        f.write("\n")


def asset_entry(attr_value, layer_identifier):
    """Package entry path of an asset value authored in a layer inside a package."""
    path = attr_value.path
    inner = layer_identifier.split("[", 1)[1].rstrip("]") if "[" in layer_identifier else ""
    folder = os.path.dirname(inner)
    return os.path.normpath(os.path.join(folder, path)).replace("\\", "/")


def textures_of(prim):
    if not prim.IsA(UsdGeom.Mesh):
        return None
    material, _ = UsdShade.MaterialBindingAPI(prim).ComputeBoundMaterial()
    found = set()
    if material:
        for p in Usd.PrimRange(material.GetPrim()):
            for attr in p.GetAttributes():
                if attr.GetName().startswith("inputs:") and attr.GetTypeName() == Sdf.ValueTypeNames.Asset:
                    value = attr.Get()
                    if value and value.path:
                        spec_layer = attr.GetPropertyStack()[0].layer.identifier
                        found.add(asset_entry(value, spec_layer))
    return sorted(found)


def expectations(usdz):
    stage = Usd.Stage.Open(usdz)
    cache = UsdGeom.BBoxCache(Usd.TimeCode.Default(), ["default", "render"], useExtentsHint=False)
    prims = []
    for prim in stage.Traverse():
        box = cache.ComputeWorldBound(prim).ComputeAlignedRange()
        bounds = None if box.IsEmpty() else {"min": list(box.GetMin()), "max": list(box.GetMax())}
        vertex_count = triangle_count = 0
        if prim.IsA(UsdGeom.Mesh):
            mesh = UsdGeom.Mesh(prim)
            vertex_count = len(mesh.GetPointsAttr().Get() or [])
            triangle_count = sum(max(0, c - 2) for c in (mesh.GetFaceVertexCountsAttr().Get() or []))
        entry = {"path": str(prim.GetPath()), "type": str(prim.GetTypeName()), "worldBounds": bounds,
                 "vertexCount": vertex_count, "triangleCount": triangle_count}
        textures = textures_of(prim)
        if textures is not None:
            entry["textures"] = textures
        custom = prim.GetCustomData()
        custom = {k: v for k, v in custom.items() if isinstance(v, str) and k != "userDocBrief"}
        if custom:
            entry["customData"] = custom
        prims.append(entry)
    return {"upAxis": str(UsdGeom.GetStageUpAxis(stage)), "metersPerUnit": UsdGeom.GetStageMetersPerUnit(stage),
            "prims": prims}


def write_json(name, data):
    with open(os.path.join(HERE, name + ".expected.json"), "w") as f:
        json.dump(data, f, indent=1, sort_keys=True)
        f.write("\n")


def package(layer_path, name):
    out = os.path.join(HERE, name + ".usdz")
    if os.path.exists(out):
        os.remove(out)
    if not UsdUtils.CreateNewUsdzPackage(Sdf.AssetPath(layer_path), out):
        sys.exit(f"packaging {name} failed")
    write_json(name, expectations(out))
    return out


def stored_zip(name, files, compress=None):
    """A zip written by Python's zipfile: stored but not 64-byte aligned unless the names happen to align."""
    out = os.path.join(HERE, name + ".usdz")
    with zipfile.ZipFile(out, "w") as z:
        for entry, data in files:
            z.writestr(zipfile.ZipInfo(entry), data, compress_type=compress or zipfile.ZIP_STORED)
    return out


def main():
    work = tempfile.mkdtemp()
    try:
        os.makedirs(os.path.join(work, "textures"))
        with open(os.path.join(work, "textures", "wood.png"), "wb") as f:
            f.write(tiny_png((120, 80, 40)))
        stage = Usd.Stage.CreateNew(os.path.join(work, "basic.usda"))
        build_basic(stage)
        stage.GetRootLayer().Save()
        stage.GetRootLayer().Export(os.path.join(work, "basic.usdc"))
        package(os.path.join(work, "basic.usda"), "basic_usda")
        package(os.path.join(work, "basic.usdc"), "basic_usdc")
        room_folder = os.path.join(work, "room")
        room = build_roomplan(room_folder)
        package(room, "roomplan")
        Sdf.Layer.FindOrOpen(room).Export(os.path.join(room_folder, "Room.usdc"))
        package(os.path.join(room_folder, "Room.usdc"), "roomplan_usdc")
        scan_folder = os.path.join(work, "scan")
        scan, captured = build_roomscan(scan_folder)
        package(scan, "roomscan")
        write_roomplan("roomscan", captured)
        Sdf.Layer.FindOrOpen(scan).Export(os.path.join(scan_folder, "Room.usdc"))
        package(os.path.join(scan_folder, "Room.usdc"), "roomscan_usdc")
        write_roomplan("roomscan_usdc", captured)
        open_scan, open_captured = build_roomscan(os.path.join(work, "open"), open_loop=True,
                                                  confidences=["high", "medium", "low"])
        package(open_scan, "roomscan_open")
        write_roomplan("roomscan_open", open_captured)

        # Malformed packages and the code each must produce.
        text = SMALL_LAYER
        png = tiny_png((1, 2, 3))
        malformed = {}
        stored_zip("misaligned", [("root.usda", text), ("textures/wood.png", png)])
        malformed["misaligned"] = {"readable": True, "findings": ["misaligned_data"]}
        stored_zip("compressed_root", [("root.usda", text)], compress=zipfile.ZIP_DEFLATED)
        malformed["compressed_root"] = {"readable": False, "findings": ["compressed_entry"]}
        with zipfile.ZipFile(os.path.join(HERE, "compressed_texture.usdz"), "w") as z:
            z.writestr(zipfile.ZipInfo("root.usda"), text)
            z.writestr(zipfile.ZipInfo("textures/wood.png"), png * 8, compress_type=zipfile.ZIP_DEFLATED)
        malformed["compressed_texture"] = {"readable": True, "findings": ["compressed_entry"]}
        stored_zip("root_not_first", [("textures/wood.png", png), ("root.usda", text)])
        malformed["root_not_first"] = {"readable": True, "findings": ["root_layer_not_first"]}
        stored_zip("traversal", [("root.usda", text), ("../../etc/evil.usda", b"#usda 1.0\n")])
        malformed["traversal"] = {"readable": True, "findings": ["path_traversal"]}
        stored_zip("disallowed", [("root.usda", text), ("notes.txt", b"hello")])
        malformed["disallowed"] = {"readable": True, "findings": ["disallowed_file_type"]}
        data = open(os.path.join(HERE, "roomplan.usdz"), "rb").read()
        with open(os.path.join(HERE, "truncated.usdz"), "wb") as f:
            f.write(data[: len(data) * 2 // 3])
        malformed["truncated"] = {"readable": False, "findings": ["truncated"]}
        with open(os.path.join(HERE, "wrong_magic.usdz"), "wb") as f:
            f.write(b"GIF89a" + data[6:2000])
        malformed["wrong_magic"] = {"readable": False, "findings": ["bad_magic"]}
        crate = open(os.path.join(work, "basic.usdc"), "rb").read()
        stored_zip("bad_crate", [("root.usdc", b"PXR-USDC" + b"\x00\x08\x00" + crate[11:200])])
        malformed["bad_crate"] = {"readable": False, "findings": ["truncated"]}
        stored_zip("zip_bomb", [("root.usda", b"#usda 1.0\n" + b" " * (64 << 20))], compress=zipfile.ZIP_DEFLATED)
        malformed["zip_bomb"] = {"readable": False, "findings": ["compressed_entry"]}
        with open(os.path.join(HERE, "malformed.expected.json"), "w") as f:
            json.dump(malformed, f, indent=1, sort_keys=True)
            f.write("\n")
    finally:
        shutil.rmtree(work)


if __name__ == "__main__":
    main()
