// Loading and saving triangle meshes, the SDF mode's input and its exported
// isosurfaces. See docs/SDF.md for the formats in detail.
//
// The readers and writers are our own, small and strict, instead of a mesh
// library: the GPU machine only gets the .deb files we carry to it, so every
// extra library dependency is one more package to carry and keep in step.
//
// Formats, chosen by the file's extension (case-insensitive):
//   .obj  text; `v x y z [r g b]` and `f` with polygons (fan-triangulated),
//         corner forms i, i/t, i//n, i/t/n and negative (relative) indices;
//         every other statement is ignored (so are `vn` normals: OBJ
//         gives them per face corner, not per vertex).
//   .ply  ascii, binary_little_endian or binary_big_endian; vertex x, y, z of
//         any numeric type (nx ny nz and red green blue are kept when present),
//         face list `vertex_indices` or `vertex_index`; other elements and
//         properties are skipped.
//   .stl  binary (when the size is 84 + 50 * the header's triangle count) or
//         ascii (starting with "solid"); vertices are welded by exact position
//         so the mesh comes back indexed.
//   .off  "OFF" (also COFF, NOFF, CNOFF: the extra per-vertex values are
//         ignored), '#' comments, counts, vertices, polygon faces.
#pragma once

#include "geometry/triangle_mesh.h"

#include <cstdint>
#include <string>
#include <vector>

namespace fusedngp {

// The extensions load_mesh reads, for messages: ".obj, .ply, .stl, .off".
extern const char* const kMeshLoadFormats;

// Reads a mesh. Any bad input (a missing file, an empty, truncated or garbled
// file, no triangles, an index out of range, a NaN or infinite coordinate, an
// unsupported extension) throws InputError with one line naming the file and
// the problem. Normals and colors are filled only when the file has them for
// every vertex.
TriangleMesh load_mesh(const std::string& path);

// The same from a file's bytes already in memory; `name` gives the extension
// and is the file name in messages.
TriangleMesh load_mesh_from_bytes(const std::vector<uint8_t>& bytes, const std::string& name);

// Writes a mesh atomically (io/atomic_file.h), chosen by extension:
//   .ply  binary little-endian: float x y z, float nx ny nz when mesh.normals
//         is set, uchar red green blue when mesh.colors is set, faces as a
//         uchar-counted int list `vertex_indices`.
//   .obj  `v x y z` (with `r g b` in [0, 1] when mesh.colors is set), `vn`
//         when mesh.normals is set (faces then read `f a//a b//b c//c`).
// Floats are written so they read back bit for bit. Anything else, or a mesh
// whose normals/colors/indices do not match its vertices, throws InputError.
void save_mesh(const std::string& path, const TriangleMesh& mesh);

} // namespace fusedngp
