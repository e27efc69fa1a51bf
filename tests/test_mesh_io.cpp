// Mesh loading and saving: every format's variants against known meshes,
// round trips, bad input as one-line InputErrors (never a crash), and a
// standard tool (assimp) reading what we write.
#include "geometry/mesh_checks.h"
#include "geometry/mesh_io.h"

#include "io_test_util.h"
#include "mesh_test_util.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <cstring>
#include <filesystem>
#include <limits>
#include <string>
#include <vector>

using namespace fusedngp;
using fusedngp::test::expect_input_error;
using fusedngp::test::ScratchDir;
using fusedngp::test::write_bytes;
using fusedngp::test::write_text;

namespace {

using Triangles = std::vector<std::array<uint32_t, 3>>;

// The tetrahedron every format's fixture describes.
const std::vector<Vec3> kTetVertices = {{0, 0, 0}, {1, 0, 0}, {0, 1, 0}, {0, 0, 1}};
const Triangles kTetTriangles = {{0, 2, 1}, {0, 1, 3}, {0, 3, 2}, {1, 2, 3}};

// Bit-for-bit equal points (EXPECT_EQ on floats is exact).
void expect_points(const std::vector<Vec3>& actual, const std::vector<Vec3>& expected) {
    ASSERT_EQ(actual.size(), expected.size());
    for (size_t i = 0; i < expected.size(); ++i) {
        EXPECT_EQ(actual[i].x, expected[i].x) << i;
        EXPECT_EQ(actual[i].y, expected[i].y) << i;
        EXPECT_EQ(actual[i].z, expected[i].z) << i;
    }
}

void expect_vertices(const TriangleMesh& mesh, const std::vector<Vec3>& expected) { expect_points(mesh.vertices, expected); }

// The same triangles, corner by corner, whatever the vertex numbering (STL
// meshes come back numbered in order of first use).
void expect_tetrahedron_by_position(const TriangleMesh& mesh) {
    ASSERT_EQ(mesh.vertices.size(), kTetVertices.size());
    ASSERT_EQ(mesh.triangles.size(), kTetTriangles.size());
    for (size_t t = 0; t < kTetTriangles.size(); ++t) {
        std::vector<Vec3> corners, expected;
        for (int k = 0; k < 3; ++k) {
            corners.push_back(mesh.vertices[mesh.triangles[t][k]]);
            expected.push_back(kTetVertices[kTetTriangles[t][k]]);
        }
        expect_points(corners, expected);
    }
    EXPECT_TRUE(analyse_mesh(mesh).watertight());
}

void expect_tetrahedron(const TriangleMesh& mesh) {
    expect_vertices(mesh, kTetVertices);
    EXPECT_EQ(mesh.triangles, kTetTriangles);
    EXPECT_TRUE(analyse_mesh(mesh).watertight());
}

TriangleMesh load_text(const ScratchDir& dir, const std::string& name, const std::string& text) {
    write_text(dir.file(name), text);
    return load_mesh(dir.file(name));
}

void expect_load_error(const ScratchDir& dir, const std::string& name, const std::string& text,
                       const std::vector<std::string>& needles) {
    write_text(dir.file(name), text);
    std::vector<std::string> all = needles;
    all.push_back(dir.file(name));
    expect_input_error([&] { load_mesh(dir.file(name)); }, all);
}

// Little- or big-endian binary data for PLY and STL fixtures.
struct ByteWriter {
    std::vector<uint8_t> bytes;
    bool big_endian = false;

    void raw(const std::string& s) { bytes.insert(bytes.end(), s.begin(), s.end()); }
    template <typename T>
    void put(T value) {
        uint8_t b[sizeof(T)];
        std::memcpy(b, &value, sizeof(T));  // the test host is little-endian (x86-64, arm64)
        if (big_endian) std::reverse(b, b + sizeof(T));
        bytes.insert(bytes.end(), b, b + sizeof(T));
    }
};

std::string kTetObj() {
    return "# tetrahedron\nv 0 0 0\nv 1 0 0\nv 0 1 0\nv 0 0 1\n"
           "f 1 3 2\nf 1 2 4\nf 1 4 3\nf 2 3 4\n";
}

const char* const kSharedSdfDirs[] = {FUSEDNGP_SOURCE_DIR "/shared/data/sdf", FUSEDNGP_SOURCE_DIR "/../shared/data/sdf",
                                      FUSEDNGP_SOURCE_DIR "/../../shared/data/sdf"};

} // namespace

// ---- OBJ ---------------------------------------------------------------------

TEST(MeshIoObj, LoadsTrianglesAndIgnoresOtherStatements) {
    ScratchDir dir;
    const std::string text = "mtllib x.mtl\no tet\ng group\nvt 0.5 0.5\nvn 0 0 1\nusemtl m\ns off\n" + kTetObj() + "l 1 2\n";
    expect_tetrahedron(load_text(dir, "tet.obj", text));
}

TEST(MeshIoObj, AcceptsEveryCornerFormAndNegativeIndices) {
    ScratchDir dir;
    const std::string text = "v 0 0 0\nv 1 0 0\nv 0 1 0\nv 0 0 1\nvt 0 0\nvn 1 0 0\n"
                             "f 1/1 3/1 2/1\n"
                             "f 1//1 2//1 4//1\n"
                             "f 1/1/1 4/1/1 3/1/1\n"
                             "f -3 -2 -1\n";  // relative: vertices 2, 3, 4
    expect_tetrahedron(load_text(dir, "tet.obj", text));
}

TEST(MeshIoObj, FanTriangulatesPolygons) {
    ScratchDir dir;
    const TriangleMesh m = load_text(dir, "poly.obj",
                                     "v 0 0 0\nv 1 0 0\nv 2 1 0\nv 1 2 0\nv 0 1 0\n"
                                     "f 1 2 3 4 5\nf 1 2 3 4\n");
    EXPECT_EQ(m.triangles, (Triangles{{0, 1, 2}, {0, 2, 3}, {0, 3, 4}, {0, 1, 2}, {0, 2, 3}}));
}

TEST(MeshIoObj, ToleratesCrLfCommentsAndPlusSigns) {
    ScratchDir dir;
    const TriangleMesh m = load_text(dir, "crlf.obj", "v 0 0 0 # origin\r\nv +1 0 0\r\nv 0 1.0e0 0\r\n\r\nf 1 2 3\r\n");
    expect_vertices(m, {{0, 0, 0}, {1, 0, 0}, {0, 1, 0}});
    EXPECT_EQ(m.triangles, (Triangles{{0, 1, 2}}));
}

TEST(MeshIoObj, ReadsVertexColorsWhenEveryVertexHasOne) {
    ScratchDir dir;
    const TriangleMesh colored = load_text(dir, "c.obj", "v 0 0 0 1 0 0\nv 1 0 0 0 1 0\nv 0 1 0 0 0 0.5\nf 1 2 3\n");
    ASSERT_EQ(colored.colors.size(), 3u);
    EXPECT_EQ(colored.colors[0], (std::array<uint8_t, 3>{255, 0, 0}));
    EXPECT_EQ(colored.colors[2], (std::array<uint8_t, 3>{0, 0, 128}));
    const TriangleMesh partly = load_text(dir, "p.obj", "v 0 0 0 1 0 0\nv 1 0 0\nv 0 1 0\nf 1 2 3\n");
    EXPECT_TRUE(partly.colors.empty());
}

TEST(MeshIoObj, LoadsTheBundledCowAsAClosedMesh) {
    const TriangleMesh cow = load_mesh(FUSEDNGP_SOURCE_DIR "/data/cow.obj");
    EXPECT_EQ(cow.vertices.size(), 2904u);
    EXPECT_EQ(cow.triangles.size(), 5804u);
    const MeshReport report = analyse_mesh(cow);
    EXPECT_TRUE(report.watertight()) << report.describe();
    EXPECT_EQ(report.describe().rfind("5804 triangles, 2904 vertices, bounds [", 0), 0u) << report.describe();
}

TEST(MeshIoObj, LoadsTheSharedSdfMeshes) {
    // Vertex and face line counts of the CGAL sample meshes (grep -c '^v ', '^f ').
    const std::vector<std::tuple<std::string, size_t, size_t>> meshes = {
        {"cow.obj", 2904, 5804}, {"fandisk.obj", 6475, 12946}, {"knot2.obj", 5760, 11520}};
    std::string dir;
    for (const char* d : kSharedSdfDirs) {
        if (std::filesystem::exists(std::string(d) + "/fandisk.obj")) dir = d;
    }
    if (dir.empty()) GTEST_SKIP() << "shared SDF meshes not found";
    for (const auto& [name, n_vertices, n_triangles] : meshes) {
        const TriangleMesh m = load_mesh(dir + "/" + name);
        EXPECT_EQ(m.vertices.size(), n_vertices) << name;
        EXPECT_EQ(m.triangles.size(), n_triangles) << name;
        const MeshReport report = analyse_mesh(m);
        EXPECT_EQ(report.degenerate_triangles, 0u) << name;
        EXPECT_TRUE(report.watertight()) << name << ": " << report.describe();
    }
}

TEST(MeshIoObj, UppercaseExtensionIsRecognised) {
    ScratchDir dir;
    expect_tetrahedron(load_text(dir, "TET.OBJ", kTetObj()));
}

// ---- PLY ---------------------------------------------------------------------

TEST(MeshIoPly, LoadsAscii) {
    ScratchDir dir;
    const std::string text = "ply\r\nformat ascii 1.0\r\ncomment a tetrahedron\r\nobj_info x\r\n"
                             "element vertex 4\nproperty float x\nproperty float y\nproperty float z\n"
                             "element face 4\nproperty list uchar int vertex_indices\nend_header\n"
                             "0 0 0\n1 0 0\n0 1 0\n0 0 1\n3 0 2 1\n3 0 1 3\n3 0 3 2\n3 1 2 3\n";
    expect_tetrahedron(load_text(dir, "tet.ply", text));
}

TEST(MeshIoPly, SkipsOtherPropertiesAndElementsAndTriangulatesQuads) {
    ScratchDir dir;
    // An extra scalar and a list on the vertices, an element before the faces,
    // extra face properties around `vertex_index`, and a quad.
    const std::string text = "ply\nformat ascii 1.0\n"
                             "element vertex 4\nproperty double y\nproperty float intensity\nproperty double x\n"
                             "property list uchar float uv\nproperty double z\n"
                             "element edge 1\nproperty int vertex1\nproperty int vertex2\n"
                             "element face 2\nproperty uchar flags\nproperty list ushort uint vertex_index\n"
                             "property list uchar float texcoord\nend_header\n"
                             "0 9 0 2 0.5 0.5 0\n0 9 1 0 0\n1 9 1 1 7 0\n1 9 0 0 0\n"
                             "0 1\n"
                             "5 4 0 1 2 3 0\n6 3 0 2 1 2 0.25 0.75\n";
    const TriangleMesh m = load_text(dir, "quad.ply", text);
    expect_vertices(m, {{0, 0, 0}, {1, 0, 0}, {1, 1, 0}, {0, 1, 0}});
    EXPECT_EQ(m.triangles, (Triangles{{0, 1, 2}, {0, 2, 3}, {0, 2, 1}}));
}

// A binary tetrahedron with mixed types: double x, short y (integers), float
// z, a uint8 alpha to skip, normals, colors, then faces as int8 counts with
// uint16 indices.
std::vector<uint8_t> binary_tet_ply(bool big_endian) {
    ByteWriter w;
    w.big_endian = big_endian;
    w.raw(std::string("ply\nformat ") + (big_endian ? "binary_big_endian" : "binary_little_endian") + " 1.0\n" +
          "element vertex 4\nproperty float64 x\nproperty int16 y\nproperty float32 z\nproperty uint8 alpha\n"
          "property float nx\nproperty float ny\nproperty float nz\n"
          "property uchar red\nproperty uchar green\nproperty uchar blue\n"
          "element face 4\nproperty list char ushort vertex_indices\nend_header\n");
    for (size_t i = 0; i < kTetVertices.size(); ++i) {
        const Vec3 v = kTetVertices[i];
        w.put<double>(v.x);
        w.put<int16_t>((int16_t)v.y);
        w.put<float>(v.z);
        w.put<uint8_t>(200);
        w.put<float>(v.x - 0.25f);
        w.put<float>(v.y - 0.25f);
        w.put<float>(v.z - 0.25f);
        w.put<uint8_t>((uint8_t)(10 * i));
        w.put<uint8_t>((uint8_t)(10 * i + 1));
        w.put<uint8_t>(255);
    }
    for (const auto& t : kTetTriangles) {
        w.put<int8_t>(3);
        for (uint32_t v : t) w.put<uint16_t>((uint16_t)v);
    }
    return w.bytes;
}

TEST(MeshIoPly, LoadsBinaryLittleAndBigEndianWithAnyNumericTypes) {
    ScratchDir dir;
    for (bool big : {false, true}) {
        write_bytes(dir.file("tet.ply"), binary_tet_ply(big));
        const TriangleMesh m = load_mesh(dir.file("tet.ply"));
        expect_tetrahedron(m);
        ASSERT_EQ(m.normals.size(), 4u);
        EXPECT_EQ(m.normals[3].z, 0.75f);
        EXPECT_EQ(m.normals[3].x, -0.25f);
        ASSERT_EQ(m.colors.size(), 4u);
        EXPECT_EQ(m.colors[2], (std::array<uint8_t, 3>{20, 21, 255}));
    }
}

TEST(MeshIoPly, LoadsBinaryWithIntCoordinatesAndSkipsLeadingElements) {
    ScratchDir dir;
    ByteWriter w;
    w.raw("ply\nformat binary_little_endian 1.0\nelement material 2\nproperty float shine\nproperty uchar id\n"
          "element vertex 3\nproperty int x\nproperty uint y\nproperty char z\n"
          "element face 1\nproperty list uint32 int32 vertex_indices\nend_header\n");
    for (int k = 0; k < 2; ++k) {
        w.put<float>(1.5f);
        w.put<uint8_t>(7);
    }
    const int coords[3][3] = {{-2, 0, -1}, {3, 1, 5}, {4, 7, -128}};
    for (const auto& c : coords) {
        w.put<int32_t>(c[0]);
        w.put<uint32_t>((uint32_t)c[1]);
        w.put<int8_t>((int8_t)c[2]);
    }
    w.put<uint32_t>(3);
    for (int32_t v : {2, 1, 0}) w.put<int32_t>(v);
    write_bytes(dir.file("int.ply"), w.bytes);
    const TriangleMesh m = load_mesh(dir.file("int.ply"));
    expect_vertices(m, {{-2, 0, -1}, {3, 1, 5}, {4, 7, -128}});
    EXPECT_EQ(m.triangles, (Triangles{{2, 1, 0}}));
}

// ---- STL ---------------------------------------------------------------------

std::vector<uint8_t> binary_tet_stl(const std::string& header_start) {
    ByteWriter w;
    std::string header = header_start;
    header.resize(80, ' ');
    w.raw(header);
    w.put<uint32_t>((uint32_t)kTetTriangles.size());
    for (const auto& t : kTetTriangles) {
        for (int k = 0; k < 3; ++k) w.put<float>(0.f);  // facet normal, unused
        for (uint32_t v : t) {
            w.put<float>(kTetVertices[v].x);
            w.put<float>(kTetVertices[v].y);
            w.put<float>(kTetVertices[v].z);
        }
        w.put<uint16_t>(0);
    }
    return w.bytes;
}

TEST(MeshIoStl, LoadsBinaryAndWeldsVertices) {
    ScratchDir dir;
    // The second header starts with "solid", as many exporters write it: the
    // exact size still marks it binary.
    for (const std::string& header : {std::string("binary tetrahedron"), std::string("solid tet")}) {
        write_bytes(dir.file("tet.stl"), binary_tet_stl(header));
        expect_tetrahedron_by_position(load_mesh(dir.file("tet.stl")));
    }
}

std::string ascii_tet_stl() {
    std::string s = "solid tet\n";
    for (const auto& t : kTetTriangles) {
        s += "  facet normal 0 0 0\n    outer loop\n";
        for (uint32_t v : t) {
            const Vec3 p = kTetVertices[v];
            s += "      vertex " + std::to_string(p.x) + " " + std::to_string(p.y) + " " + std::to_string(p.z) + "\n";
        }
        s += "    endloop\n  endfacet\n";
    }
    return s + "endsolid tet\n";
}

TEST(MeshIoStl, LoadsAsciiAndWeldsVertices) {
    ScratchDir dir;
    expect_tetrahedron_by_position(load_text(dir, "tet.stl", ascii_tet_stl()));
    expect_tetrahedron_by_position(load_text(dir, "tet_lead.STL", "  \r\n" + ascii_tet_stl()));
}

// ---- OFF ---------------------------------------------------------------------

TEST(MeshIoOff, LoadsWithCommentsAndPolygons) {
    ScratchDir dir;
    expect_tetrahedron(load_text(dir, "tet.off",
                                 "OFF\n# a tetrahedron\n4 4 6\n\n0 0 0\n1 0 0 # x\n0 1 0\n0 0 1\n"
                                 "3 0 2 1\n3 0 1 3\n3 0 3 2\n3 1 2 3 255 0 0\n"));
    const TriangleMesh quad = load_text(dir, "quad.off", "OFF 4 1 0\n0 0 0\n1 0 0\n1 1 0\n0 1 0\n4 0 1 2 3\n");
    EXPECT_EQ(quad.triangles, (Triangles{{0, 1, 2}, {0, 2, 3}}));
}

TEST(MeshIoOff, IgnoresExtraPerVertexValuesOfColorAndNormalVariants) {
    ScratchDir dir;
    expect_tetrahedron(load_text(dir, "tet.off",
                                 "CNOFF\n4 4\n0 0 0 0 0 1 0.5 0.5 0.5 1\n1 0 0 0 0 1 1 1 1 1\n"
                                 "0 1 0 0 0 1 1 1 1 1\n0 0 1 0 0 1 1 1 1 1\n"
                                 "3 0 2 1\n3 0 1 3\n3 0 3 2\n3 1 2 3\n"));
}

// ---- bad input ---------------------------------------------------------------

TEST(MeshIoErrors, MissingUnreadableAndEmptyFiles) {
    ScratchDir dir;
    expect_input_error([&] { load_mesh(dir.file("missing.obj")); }, {"missing.obj", "No such file"});
    std::filesystem::create_directory(dir.file("folder.ply"));
    expect_input_error([&] { load_mesh(dir.file("folder.ply")); }, {"folder.ply"});
    for (const std::string name : {"e.obj", "e.ply", "e.stl", "e.off"}) expect_load_error(dir, name, "", {"empty"});
}

TEST(MeshIoErrors, UnsupportedExtensionsNameTheSupportedFormats) {
    ScratchDir dir;
    for (const std::string name : {"scene.glb", "scene.GLTF"}) {
        expect_load_error(dir, name, "{}", {"glTF is not supported", ".obj, .ply, .stl, .off"});
    }
    expect_load_error(dir, "mesh.xyz", "1 2 3", {"unsupported mesh format '.xyz'", ".obj, .ply, .stl, .off"});
    expect_load_error(dir, "mesh", "v 0 0 0", {"no file extension", ".obj"});
}

TEST(MeshIoErrors, Truncated) {
    ScratchDir dir;
    const std::string ply_head = "ply\nformat ascii 1.0\nelement vertex 4\nproperty float x\nproperty float y\n"
                                 "property float z\nelement face 1\nproperty list uchar int vertex_indices\nend_header\n";
    expect_load_error(dir, "v.ply", ply_head + "0 0 0\n1 0 0\n", {"vertex 2 of 4", "truncated"});
    expect_load_error(dir, "f.ply", ply_head + "0 0 0\n1 0 0\n0 1 0\n0 0 1\n3 0 1", {"face 0 of 1", "truncated"});
    expect_load_error(dir, "h.ply", "ply\nformat ascii 1.0\nelement vertex 4\n", {"end_header"});
    expect_load_error(dir, "v.off", "OFF\n4 4 0\n0 0 0\n1 0 0\n", {"2 of 4 vertices", "truncated"});
    expect_load_error(dir, "f.off", "OFF\n3 2 0\n0 0 0\n1 0 0\n0 1 0\n3 0 1 2\n", {"1 of 2 faces", "truncated"});
    expect_load_error(dir, "short.off", "OFF\n3 1 0\n0 0 0\n1 0 0\n0 1 0\n4 0 1 2\n", {"fewer indices"});
    const std::string stl = ascii_tet_stl();
    expect_load_error(dir, "a.stl", stl.substr(0, stl.find('\n', stl.size() / 2) + 1), {"endsolid", "truncated"});

    std::vector<uint8_t> binary = binary_tet_ply(false);
    binary.resize(binary.size() - 3);
    write_bytes(dir.file("b.ply"), binary);
    expect_input_error([&] { load_mesh(dir.file("b.ply")); }, {"b.ply", "face 3 of 4", "truncated"});
    std::vector<uint8_t> binary_stl = binary_tet_stl("binary");
    binary_stl.resize(binary_stl.size() - 10);
    write_bytes(dir.file("b.stl"), binary_stl);
    expect_input_error([&] { load_mesh(dir.file("b.stl")); }, {"b.stl", "declares 4 triangles", "truncated"});
    write_bytes(dir.file("tiny.stl"), {1, 2, 3});
    expect_input_error([&] { load_mesh(dir.file("tiny.stl")); }, {"tiny.stl", "too short"});
}

TEST(MeshIoErrors, GarbageNumbers) {
    ScratchDir dir;
    expect_load_error(dir, "g.obj", "v 0 0 0\nv 1 zero 0\nv 0 1 0\nf 1 2 3\n", {"line 2", "bad number 'zero'"});
    expect_load_error(dir, "g2.obj", "v 0 0 0\nv 1 0 0\nv 0 1 0\nf 1 2 x\n", {"line 4", "bad face index 'x'"});
    expect_load_error(dir, "g3.obj", "v 0 0\n", {"line 1", "x y z"});
    expect_load_error(dir, "g4.obj", "v 0 0 0\nv 1 0 0\nf 1 2\n", {"line 3", "at least 3"});
    expect_load_error(dir, "g.ply",
                      "ply\nformat ascii 1.0\nelement vertex 1\nproperty float x\nproperty float y\nproperty float z\n"
                      "end_header\n0 1.5.5 0\n",
                      {"line 8", "bad number '1.5.5'"});
    expect_load_error(dir, "t.ply", "ply\nformat ascii 1.0\nelement vertex 1\nproperty quad x\nend_header\n",
                      {"line 4", "unknown PLY type 'quad'"});
    expect_load_error(dir, "f.ply", "ply\nformat xml 1.0\nend_header\n", {"unknown PLY format 'xml'"});
    expect_load_error(dir, "n.ply", "plyx\n", {"does not start with 'ply'"});
    expect_load_error(dir, "g.off", "OFF\n3 1 0\n0 0 0\n1 0 0\n0 one 0\n3 0 1 2\n", {"line 5", "bad number 'one'"});
    expect_load_error(dir, "h.off", "OFX\n3 1 0\n", {"OFF"});
    expect_load_error(dir, "b.off", "OFF BINARY\n3 1 0\n", {"binary OFF"});
    expect_load_error(dir, "g.stl", "solid x\n facet normal 0 0 0\n  outer loop\n   vertex 0 0 zz\n", {"line 4", "bad number 'zz'"});
    expect_load_error(dir, "w.stl", "solid x\n hello\nendsolid\n", {"line 2", "unexpected 'hello'"});
}

TEST(MeshIoErrors, NoTriangles) {
    ScratchDir dir;
    expect_load_error(dir, "pts.obj", "v 0 0 0\nv 1 0 0\n", {"no triangles", "2 vertices"});
    expect_load_error(dir, "blank.obj", "# nothing\n\n", {"no vertices and no triangles"});
    expect_load_error(dir, "pts.ply",
                      "ply\nformat ascii 1.0\nelement vertex 1\nproperty float x\nproperty float y\nproperty float z\n"
                      "end_header\n0 0 0\n",
                      {"no triangles"});
    expect_load_error(dir, "nov.ply", "ply\nformat ascii 1.0\nelement face 0\nproperty list uchar int vertex_indices\nend_header\n",
                      {"no vertex element"});
    expect_load_error(dir, "noxyz.ply", "ply\nformat ascii 1.0\nelement vertex 1\nproperty float x\nend_header\n0\n",
                      {"no x, y and z"});
    expect_load_error(dir, "zero.off", "OFF\n0 0 0\n", {"no vertices and no triangles"});
    expect_load_error(dir, "empty.stl", "solid empty\nendsolid empty\n", {"no vertices and no triangles"});
    write_bytes(dir.file("zero.stl"), std::vector<uint8_t>(84, 0));
    expect_input_error([&] { load_mesh(dir.file("zero.stl")); }, {"zero.stl", "no vertices and no triangles"});
}

TEST(MeshIoErrors, IndexOutOfRange) {
    ScratchDir dir;
    expect_load_error(dir, "r.obj", kTetObj() + "f 1 2 5\n", {"uses vertex 4", "only 4 vertices", "out of range"});
    expect_load_error(dir, "r0.obj", kTetObj() + "f 0 1 2\n", {"index 0"});
    expect_load_error(dir, "rn.obj", kTetObj() + "f -1 -2 -5\n", {"face index -5 is out of range"});
    expect_load_error(dir, "r.off", "OFF\n3 1 0\n0 0 0\n1 0 0\n0 1 0\n3 0 1 3\n", {"uses vertex 3", "out of range"});
    expect_load_error(dir, "neg.off", "OFF\n3 1 0\n0 0 0\n1 0 0\n0 1 0\n3 0 1 -1\n", {"bad number '-1'"});
    expect_load_error(dir, "r.ply",
                      "ply\nformat ascii 1.0\nelement vertex 3\nproperty float x\nproperty float y\nproperty float z\n"
                      "element face 1\nproperty list uchar int vertex_indices\nend_header\n0 0 0\n1 0 0\n0 1 0\n3 0 1 7\n",
                      {"uses vertex 7", "out of range"});
    expect_load_error(dir, "neg.ply",
                      "ply\nformat ascii 1.0\nelement vertex 3\nproperty float x\nproperty float y\nproperty float z\n"
                      "element face 1\nproperty list uchar int vertex_indices\nend_header\n0 0 0\n1 0 0\n0 1 0\n3 0 -1 2\n",
                      {"bad index"});
}

TEST(MeshIoErrors, NonFiniteCoordinates) {
    ScratchDir dir;
    expect_load_error(dir, "nan.obj", "v 0 0 0\nv nan 0 0\nv 0 1 0\nf 1 2 3\n", {"vertex 1", "non-finite"});
    expect_load_error(dir, "inf.off", "OFF\n3 1 0\n0 0 0\n1 0 0\n0 inf 0\n3 0 1 2\n", {"vertex 2", "non-finite"});
    expect_load_error(dir, "big.obj", "v 0 0 0\nv 1e39 0 0\nv 0 1 0\nf 1 2 3\n", {"vertex 1"});
    std::vector<uint8_t> stl = binary_tet_stl("binary");
    const float nan = std::numeric_limits<float>::quiet_NaN();
    std::memcpy(stl.data() + 84 + 12, &nan, 4);  // the first corner's x
    write_bytes(dir.file("nan.stl"), stl);
    expect_input_error([&] { load_mesh(dir.file("nan.stl")); }, {"nan.stl", "non-finite"});
}

// Every prefix of valid files and every byte corrupted: each loads or throws
// InputError, nothing else (run under ASan to also catch out-of-bounds reads).
TEST(MeshIoErrors, CutsAndCorruptionNeverCrash) {
    std::vector<std::pair<std::string, std::vector<uint8_t>>> files = {
        {"f.ply", binary_tet_ply(false)}, {"b.ply", binary_tet_ply(true)}, {"f.stl", binary_tet_stl("solid")}};
    for (const auto& [name, text] : std::vector<std::pair<std::string, std::string>>{
             {"f.obj", kTetObj()}, {"f.off", "OFF\n4 4 0\n0 0 0\n1 0 0\n0 1 0\n0 0 1\n3 0 2 1\n3 0 1 3\n3 0 3 2\n3 1 2 3\n"},
             {"a.stl", ascii_tet_stl()}}) {
        files.push_back({name, std::vector<uint8_t>(text.begin(), text.end())});
    }
    for (const auto& [name, bytes] : files) {
        size_t loaded = 0, rejected = 0;
        const std::string& file_name = name;  // C++17 lambdas cannot capture a structured binding
        auto attempt = [&](const std::vector<uint8_t>& content) {
            try {
                load_mesh_from_bytes(content, file_name);
                ++loaded;
            } catch (const InputError& e) {
                EXPECT_EQ(std::string(e.what()).find('\n'), std::string::npos) << e.what();
                ++rejected;
            }
        };
        for (size_t cut = 0; cut < bytes.size(); ++cut) attempt(std::vector<uint8_t>(bytes.begin(), bytes.begin() + (long)cut));
        for (size_t at = 0; at < bytes.size(); ++at) {
            for (uint8_t flip : {0x01, 0x80, 0xA5}) {
                std::vector<uint8_t> corrupt = bytes;
                corrupt[at] ^= flip;
                attempt(corrupt);
            }
        }
        EXPECT_GT(rejected, bytes.size() / 4) << name;
        EXPECT_GT(loaded, 0u) << name;
    }
}

// ---- saving ------------------------------------------------------------------

TriangleMesh colored_sphere() {
    TriangleMesh m = fusedngp::test::make_sphere_mesh({0.1f, -0.2f, 0.3f}, 0.7f, 8, 12);
    for (size_t i = 0; i < m.vertices.size(); ++i) {
        m.normals.push_back(normalize(m.vertices[i] - Vec3{0.1f, -0.2f, 0.3f}));
        m.colors.push_back({(uint8_t)(i * 7), (uint8_t)(255 - i), (uint8_t)(i * 13 + 1)});
    }
    return m;
}

void expect_same_geometry(const TriangleMesh& a, const TriangleMesh& b) {
    expect_vertices(a, b.vertices);
    EXPECT_EQ(a.triangles, b.triangles);
}

TEST(MeshIoSave, PlyRoundTripKeepsVerticesTrianglesNormalsAndColors) {
    ScratchDir dir;
    const TriangleMesh m = colored_sphere();
    save_mesh(dir.file("s.ply"), m);
    const TriangleMesh back = load_mesh(dir.file("s.ply"));
    expect_same_geometry(back, m);
    expect_points(back.normals, m.normals);
    EXPECT_EQ(back.colors, m.colors);
    EXPECT_EQ(dir.entries(), std::vector<std::string>{"s.ply"});  // no temporary file left

    TriangleMesh plain = m;
    plain.normals.clear();
    plain.colors.clear();
    save_mesh(dir.file("plain.PLY"), plain);
    const TriangleMesh plain_back = load_mesh(dir.file("plain.PLY"));
    expect_same_geometry(plain_back, m);
    EXPECT_TRUE(plain_back.normals.empty());
    EXPECT_TRUE(plain_back.colors.empty());
    // 3 floats per vertex, 1 + 3 * 4 bytes per triangle, after the header.
    const auto bytes = fusedngp::test::read_bytes(dir.file("plain.PLY"));
    const std::string text(bytes.begin(), bytes.end());
    const size_t body = text.find("end_header\n") + 11;
    EXPECT_EQ(bytes.size() - body, m.vertices.size() * 12 + m.triangles.size() * 13);
}

TEST(MeshIoSave, ObjRoundTripKeepsVerticesTrianglesAndColorsBitForBit) {
    ScratchDir dir;
    TriangleMesh m = colored_sphere();
    m.vertices[1] = {1.0f / 3.0f, -1e-30f, 123456.789f};  // needs every digit to come back exactly
    save_mesh(dir.file("s.obj"), m);
    const TriangleMesh back = load_mesh(dir.file("s.obj"));
    expect_same_geometry(back, m);
    EXPECT_EQ(back.colors, m.colors);
    const auto bytes = fusedngp::test::read_bytes(dir.file("s.obj"));
    const std::string text(bytes.begin(), bytes.end());
    EXPECT_NE(text.find("\nvn "), std::string::npos);
    EXPECT_NE(text.find("\nf 1//1 "), std::string::npos);
}

TEST(MeshIoSave, RejectsUnsupportedFormatsAndInconsistentMeshes) {
    ScratchDir dir;
    const TriangleMesh box = fusedngp::test::make_box_mesh({0, 0, 0}, {1, 1, 1});
    expect_input_error([&] { save_mesh(dir.file("b.stl"), box); }, {"b.stl", "unsupported format '.stl'", ".ply, .obj"});
    TriangleMesh bad = box;
    bad.normals.resize(3);
    expect_input_error([&] { save_mesh(dir.file("b.ply"), bad); }, {"b.ply", "3 normals for 8 vertices"});
    bad = box;
    bad.triangles[0][1] = 8;
    expect_input_error([&] { save_mesh(dir.file("b.obj"), bad); }, {"b.obj", "vertex 8 of 8"});
    expect_input_error([&] { save_mesh(dir.file("missing_dir/b.obj"), box); }, {"missing_dir/b.obj"});
    EXPECT_TRUE(dir.entries().empty());
}

// ---- a standard tool reads what we write -----------------------------------

namespace {

// Runs a command, returning its stdout and stderr, or nothing when it fails.
bool run_command(const std::string& command, std::string& output) {
    FILE* pipe = popen((command + " 2>&1").c_str(), "r");
    if (!pipe) return false;
    char buffer[4096];
    size_t n;
    while ((n = fread(buffer, 1, sizeof(buffer), pipe)) > 0) output.append(buffer, n);
    return pclose(pipe) == 0;
}

// The number after "label:" in assimp's summary, or -1.
long assimp_count(const std::string& output, const std::string& label) {
    const size_t at = output.find("\n" + label + ":");
    if (at == std::string::npos) return -1;
    return std::strtol(output.c_str() + at + label.size() + 2, nullptr, 10);
}

} // namespace

TEST(MeshIoAssimp, ReadsOurPlyAndObjWithTheRightCounts) {
    std::string which;
    if (!run_command("command -v assimp", which)) GTEST_SKIP() << "the assimp CLI (assimp-utils) is not installed";
    ScratchDir dir;
    TriangleMesh plain = fusedngp::test::make_torus_mesh({0, 0, 0}, 1.f, 0.3f, 12, 8);
    TriangleMesh rich = colored_sphere();
    for (const auto& [name, mesh] : {std::pair{"plain.ply", plain}, std::pair{"rich.ply", rich}, std::pair{"plain.obj", plain},
                                     std::pair{"rich.obj", rich}}) {
        save_mesh(dir.file(name), mesh);
        std::string output;
        ASSERT_TRUE(run_command("assimp info '" + dir.file(name) + "'", output)) << output;
        EXPECT_EQ(assimp_count(output, "Vertices"), (long)mesh.vertices.size()) << name << "\n" << output;
        EXPECT_EQ(assimp_count(output, "Faces"), (long)mesh.triangles.size()) << name << "\n" << output;
    }
}
