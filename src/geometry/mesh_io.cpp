#include "geometry/mesh_io.h"

#include "core/errors.h"
#include "geometry/mesh_checks.h"
#include "io/atomic_file.h"
#include "io/path_extension.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

namespace fusedngp {

const char* const kMeshLoadFormats = ".obj, .ply, .stl, .off";

namespace {

using Bytes = std::vector<uint8_t>;

// A problem with a file's contents; load_mesh prefixes the file name.
[[noreturn]] void bad(const std::string& problem) { throw InputError(problem); }

std::string at_line(size_t line) { return "line " + std::to_string(line) + ": "; }

// ---- text ------------------------------------------------------------------

bool is_space(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\n' || c == '\v' || c == '\f'; }

std::string_view strip_comment(std::string_view line) {
    size_t hash = line.find('#');
    return hash == std::string_view::npos ? line : line.substr(0, hash);
}

void split(std::string_view line, std::vector<std::string_view>& tokens) {
    tokens.clear();
    size_t i = 0;
    while (i < line.size()) {
        while (i < line.size() && is_space(line[i])) ++i;
        size_t start = i;
        while (i < line.size() && !is_space(line[i])) ++i;
        if (i > start) tokens.push_back(line.substr(start, i - start));
    }
}

// Lines of a text, numbered from 1 for messages.
class LineReader {
public:
    explicit LineReader(std::string_view text) : text_(text) {}
    bool next(std::string_view& line) {
        if (pos_ >= text_.size()) return false;
        size_t end = std::min(text_.find('\n', pos_), text_.size());
        line = text_.substr(pos_, end - pos_);
        pos_ = end + 1;
        ++line_;
        return true;
    }
    size_t line() const { return line_; }
    size_t offset() const { return std::min(pos_, text_.size()); }

private:
    std::string_view text_;
    size_t pos_ = 0;
    size_t line_ = 0;
};

// Whitespace-separated tokens across lines (PLY ascii bodies).
class TokenReader {
public:
    TokenReader(std::string_view text, size_t first_line) : text_(text), line_(first_line) {}
    bool next(std::string_view& token) {
        while (pos_ < text_.size() && is_space(text_[pos_])) line_ += text_[pos_++] == '\n';
        if (pos_ >= text_.size()) return false;
        size_t start = pos_;
        while (pos_ < text_.size() && !is_space(text_[pos_])) ++pos_;
        token = text_.substr(start, pos_ - start);
        return true;
    }
    size_t line() const { return line_; }

private:
    std::string_view text_;
    size_t pos_ = 0;
    size_t line_;
};

// Numbers in the C locale whatever the process's locale is.
template <typename T>
bool parse_number(std::string_view s, T& out) {
    if (s.size() > 1 && s[0] == '+' && s[1] != '-') s.remove_prefix(1);
    auto result = std::from_chars(s.data(), s.data() + s.size(), out);
    return result.ec == std::errc() && result.ptr == s.data() + s.size();
}

// A coordinate beyond float's range reads as inf (or 0), so the finite check
// names the vertex instead of calling the number garbage.
bool parse_float(std::string_view s, float& out) {
    if (parse_number(s, out)) return true;
    double wide = 0;
    if (!parse_number(s, wide)) return false;
    out = (float)wide;
    return true;
}

template <typename T>
T number_or_throw(std::string_view s, size_t line) {
    T value{};
    bool ok = false;
    if constexpr (std::is_same_v<T, float>) ok = parse_float(s, value);
    else ok = parse_number(s, value);
    if (!ok) bad(at_line(line) + "bad number '" + std::string(s) + "'");
    return value;
}

Vec3 parse_point(const std::vector<std::string_view>& tokens, size_t first, size_t line) {
    return {number_or_throw<float>(tokens[first], line), number_or_throw<float>(tokens[first + 1], line),
            number_or_throw<float>(tokens[first + 2], line)};
}

void add_fan(TriangleMesh& mesh, const std::vector<uint32_t>& polygon) {
    for (size_t k = 1; k + 1 < polygon.size(); ++k) mesh.triangles.push_back({polygon[0], polygon[k], polygon[k + 1]});
}

uint8_t unit_to_byte(double v) {
    if (!(v > 0)) return 0;  // NaN too
    return (uint8_t)std::lround(std::min(v, 1.0) * 255.0);
}

// ---- OBJ -------------------------------------------------------------------

// One face corner: "i", "i/t", "i//n" or "i/t/n"; negative i counts back from
// the last vertex read so far.
uint32_t obj_corner(std::string_view corner, size_t n_vertices, size_t line) {
    std::string_view index = corner.substr(0, corner.find('/'));
    int64_t i = 0;
    if (!parse_number(index, i)) bad(at_line(line) + "bad face index '" + std::string(corner) + "'");
    if (i == 0) bad(at_line(line) + "face index 0 (OBJ indices start at 1)");
    int64_t resolved = i > 0 ? i - 1 : (int64_t)n_vertices + i;
    if (resolved < 0 || resolved > (int64_t)std::numeric_limits<uint32_t>::max()) {
        bad(at_line(line) + "face index " + std::to_string(i) + " is out of range (" + std::to_string(n_vertices) +
            " vertices so far)");
    }
    return (uint32_t)resolved;
}

TriangleMesh read_obj(std::string_view text) {
    TriangleMesh mesh;
    std::vector<std::array<uint8_t, 3>> colors;  // kept only if every vertex has one
    LineReader lines(text);
    std::string_view line;
    std::vector<std::string_view> tokens;
    std::vector<uint32_t> polygon;
    while (lines.next(line)) {
        split(strip_comment(line), tokens);
        if (tokens.empty()) continue;
        if (tokens[0] == "v") {
            if (tokens.size() < 4) bad(at_line(lines.line()) + "a vertex needs x y z");
            mesh.vertices.push_back(parse_point(tokens, 1, lines.line()));
            if (tokens.size() >= 7) {  // "v x y z r g b": colors in [0, 1]
                Vec3 c = parse_point(tokens, 4, lines.line());
                colors.push_back({unit_to_byte(c.x), unit_to_byte(c.y), unit_to_byte(c.z)});
            }
        } else if (tokens[0] == "f") {
            polygon.clear();
            for (size_t k = 1; k < tokens.size(); ++k) polygon.push_back(obj_corner(tokens[k], mesh.vertices.size(), lines.line()));
            if (polygon.size() < 3) bad(at_line(lines.line()) + "a face needs at least 3 vertices");
            add_fan(mesh, polygon);
        }
    }
    if (colors.size() == mesh.vertices.size()) mesh.colors = std::move(colors);
    return mesh;
}

// ---- PLY -------------------------------------------------------------------

enum class PlyType { i8, u8, i16, u16, i32, u32, f32, f64 };
enum class PlyFormat { ascii, binary_le, binary_be };

struct PlyProperty {
    std::string name;
    PlyType type = PlyType::f32;        // the value type (of the items, for a list)
    bool is_list = false;
    PlyType count_type = PlyType::u8;   // lists only
};

struct PlyElement {
    std::string name;
    uint64_t count = 0;
    std::vector<PlyProperty> properties;
};

struct PlyHeader {
    PlyFormat format = PlyFormat::ascii;
    std::vector<PlyElement> elements;
    size_t body_offset = 0;
    size_t body_line = 0;  // the header's line count, for ascii messages
};

bool ply_type(std::string_view name, PlyType& type) {
    static const std::pair<const char*, PlyType> names[] = {
        {"char", PlyType::i8},    {"int8", PlyType::i8},     {"uchar", PlyType::u8},  {"uint8", PlyType::u8},
        {"short", PlyType::i16},  {"int16", PlyType::i16},   {"ushort", PlyType::u16}, {"uint16", PlyType::u16},
        {"int", PlyType::i32},    {"int32", PlyType::i32},   {"uint", PlyType::u32},  {"uint32", PlyType::u32},
        {"float", PlyType::f32},  {"float32", PlyType::f32}, {"double", PlyType::f64}, {"float64", PlyType::f64}};
    for (const auto& [n, t] : names) {
        if (name == n) {
            type = t;
            return true;
        }
    }
    return false;
}

size_t ply_size(PlyType type) {
    switch (type) {
    case PlyType::i8: case PlyType::u8: return 1;
    case PlyType::i16: case PlyType::u16: return 2;
    case PlyType::i32: case PlyType::u32: case PlyType::f32: return 4;
    case PlyType::f64: return 8;
    }
    return 0;
}

bool is_float_type(PlyType type) { return type == PlyType::f32 || type == PlyType::f64; }

PlyType ply_type_or_throw(std::string_view name, size_t line) {
    PlyType type;
    if (!ply_type(name, type)) bad(at_line(line) + "unknown PLY type '" + std::string(name) + "'");
    return type;
}

void read_ply_property(const std::vector<std::string_view>& tokens, size_t line, PlyHeader& header) {
    if (header.elements.empty()) bad(at_line(line) + "PLY property before any element");
    PlyProperty p;
    if (tokens.size() == 5 && tokens[1] == "list") {
        p.is_list = true;
        p.count_type = ply_type_or_throw(tokens[2], line);
        p.type = ply_type_or_throw(tokens[3], line);
        if (is_float_type(p.count_type)) bad(at_line(line) + "PLY list count type must be an integer type");
        p.name = tokens[4];
    } else if (tokens.size() == 3) {
        p.type = ply_type_or_throw(tokens[1], line);
        p.name = tokens[2];
    } else {
        bad(at_line(line) + "bad PLY property line");
    }
    header.elements.back().properties.push_back(p);
}

PlyHeader read_ply_header(std::string_view text) {
    PlyHeader header;
    LineReader lines(text);
    std::string_view line;
    std::vector<std::string_view> tokens;
    if (lines.next(line)) split(line, tokens);
    if (tokens.size() != 1 || tokens[0] != "ply") bad("does not start with 'ply'");
    bool has_format = false;
    while (lines.next(line)) {
        split(line, tokens);
        if (tokens.empty() || tokens[0] == "comment" || tokens[0] == "obj_info") continue;
        const size_t n = lines.line();
        if (tokens[0] == "end_header") {
            if (!has_format) bad("PLY header has no format line");
            header.body_offset = lines.offset();
            header.body_line = n;
            return header;
        }
        if (tokens[0] == "format" && tokens.size() == 3) {
            if (tokens[1] == "ascii") header.format = PlyFormat::ascii;
            else if (tokens[1] == "binary_little_endian") header.format = PlyFormat::binary_le;
            else if (tokens[1] == "binary_big_endian") header.format = PlyFormat::binary_be;
            else bad(at_line(n) + "unknown PLY format '" + std::string(tokens[1]) + "'");
            has_format = true;
        } else if (tokens[0] == "element" && tokens.size() == 3) {
            PlyElement e;
            e.name = tokens[1];
            if (!parse_number(tokens[2], e.count)) bad(at_line(n) + "bad element count '" + std::string(tokens[2]) + "'");
            header.elements.push_back(e);
        } else if (tokens[0] == "property") {
            read_ply_property(tokens, n, header);
        } else {
            bad(at_line(n) + "unexpected PLY header line '" + std::string(line.substr(0, 60)) + "'");
        }
    }
    bad("PLY header has no end_header (truncated?)");
}

struct PlyEnd {};  // the body ran out; the element loop says where

// The values of a PLY body one by one, as doubles (exact for every PLY type).
class PlyValues {
public:
    PlyValues(const PlyHeader& header, const Bytes& bytes)
        : format_(header.format), data_(bytes.data()), pos_(header.body_offset), size_(bytes.size()),
          tokens_(std::string_view((const char*)bytes.data() + header.body_offset, bytes.size() - header.body_offset),
                  header.body_line + 1) {}

    double next(PlyType type) {
        if (format_ == PlyFormat::ascii) return next_text();
        const size_t n = ply_size(type);
        if (size_ - pos_ < n) throw PlyEnd{};
        uint64_t u = 0;  // assembled by shifts, so the host's byte order does not matter
        for (size_t k = 0; k < n; ++k) {
            uint64_t byte = data_[pos_ + (format_ == PlyFormat::binary_le ? k : n - 1 - k)];
            u |= byte << (8 * k);
        }
        pos_ += n;
        return decode(type, u);
    }

    // A list count or vertex index: a non-negative integer that fits 32 bits.
    uint32_t next_index(PlyType type) {
        double v = next(type);
        if (!(v >= 0) || v != std::floor(v) || v > (double)std::numeric_limits<uint32_t>::max()) {
            bad(where() + "bad index or count " + std::to_string(v));
        }
        return (uint32_t)v;
    }

    // Skips a record of fixed-size properties at once (binary bodies only).
    bool skip_bytes(uint64_t n) {
        if (format_ == PlyFormat::ascii) return false;
        if (size_ - pos_ < n) throw PlyEnd{};
        pos_ += (size_t)n;
        return true;
    }

    size_t body_size() const { return size_ - pos_; }

private:
    double next_text() {
        std::string_view token;
        if (!tokens_.next(token)) throw PlyEnd{};
        double v = 0;
        if (!parse_number(token, v)) bad(at_line(tokens_.line()) + "bad number '" + std::string(token) + "'");
        return v;
    }

    static double decode(PlyType type, uint64_t u) {
        switch (type) {
        case PlyType::i8: return (int8_t)(uint8_t)u;
        case PlyType::u8: return (uint8_t)u;
        case PlyType::i16: return (int16_t)(uint16_t)u;
        case PlyType::u16: return (uint16_t)u;
        case PlyType::i32: return (int32_t)(uint32_t)u;
        case PlyType::u32: return (uint32_t)u;
        case PlyType::f32: {
            uint32_t bits = (uint32_t)u;
            float f;
            std::memcpy(&f, &bits, 4);
            return f;
        }
        case PlyType::f64: {
            double d;
            std::memcpy(&d, &u, 8);
            return d;
        }
        }
        return 0;
    }

    std::string where() const { return format_ == PlyFormat::ascii ? at_line(tokens_.line()) : std::string(); }

    PlyFormat format_;
    const uint8_t* data_;
    size_t pos_, size_;
    TokenReader tokens_;
};

void skip_property(const PlyProperty& p, PlyValues& values) {
    if (!p.is_list) {
        values.next(p.type);
        return;
    }
    for (uint32_t k = values.next_index(p.count_type); k > 0; --k) values.next(p.type);
}

// What a vertex property is for.
enum Slot { kX, kY, kZ, kNx, kNy, kNz, kRed, kGreen, kBlue, kSlots, kSkip = kSlots };

Slot vertex_slot(const PlyProperty& p) {
    static const char* const names[kSlots] = {"x", "y", "z", "nx", "ny", "nz", "red", "green", "blue"};
    if (p.is_list) return kSkip;
    for (int s = 0; s < kSlots; ++s) {
        if (p.name == names[s]) return (Slot)s;
    }
    return kSkip;
}

uint8_t color_byte(double v, PlyType type) {
    if (is_float_type(type)) return unit_to_byte(v);  // float colors are in [0, 1]
    return v > 0 ? (uint8_t)std::min(v, 255.0) : 0;
}

void read_ply_vertices(const PlyElement& e, PlyValues& values, TriangleMesh& mesh, uint64_t& i) {
    std::vector<Slot> slots;
    bool has[kSlots] = {};
    PlyType color_type = PlyType::u8;
    for (const PlyProperty& p : e.properties) {
        slots.push_back(vertex_slot(p));
        if (slots.back() != kSkip) has[slots.back()] = true;
        if (slots.back() == kRed) color_type = p.type;
    }
    if (!has[kX] || !has[kY] || !has[kZ]) bad("PLY vertex element has no x, y and z properties");
    const bool normals = has[kNx] && has[kNy] && has[kNz], colors = has[kRed] && has[kGreen] && has[kBlue];
    if (e.count > std::numeric_limits<uint32_t>::max()) bad("too many vertices (" + std::to_string(e.count) + ")");
    const size_t reserve = (size_t)std::min<uint64_t>(e.count, values.body_size() / 3);  // never trust the count alone
    mesh.vertices.reserve(reserve);
    if (normals) mesh.normals.reserve(reserve);
    if (colors) mesh.colors.reserve(reserve);
    double slot_values[kSlots + 1] = {};
    for (i = 0; i < e.count; ++i) {
        for (size_t k = 0; k < e.properties.size(); ++k) {
            const PlyProperty& p = e.properties[k];
            if (slots[k] == kSkip) skip_property(p, values);
            else slot_values[slots[k]] = values.next(p.type);
        }
        mesh.vertices.push_back({(float)slot_values[kX], (float)slot_values[kY], (float)slot_values[kZ]});
        if (normals) mesh.normals.push_back({(float)slot_values[kNx], (float)slot_values[kNy], (float)slot_values[kNz]});
        if (colors) {
            mesh.colors.push_back({color_byte(slot_values[kRed], color_type), color_byte(slot_values[kGreen], color_type),
                                   color_byte(slot_values[kBlue], color_type)});
        }
    }
}

void read_ply_faces(const PlyElement& e, PlyValues& values, TriangleMesh& mesh, uint64_t& i) {
    auto is_indices = [](const PlyProperty& p) { return p.is_list && (p.name == "vertex_indices" || p.name == "vertex_index"); };
    if (std::none_of(e.properties.begin(), e.properties.end(), is_indices)) {
        bad("PLY face element has no vertex_indices list");
    }
    mesh.triangles.reserve((size_t)std::min<uint64_t>(e.count, values.body_size() / 4));
    std::vector<uint32_t> polygon;
    for (i = 0; i < e.count; ++i) {
        for (const PlyProperty& p : e.properties) {
            if (!is_indices(p)) {
                skip_property(p, values);
                continue;
            }
            polygon.clear();  // grown index by index: a corrupt count cannot allocate more than the file holds
            for (uint32_t k = values.next_index(p.count_type); k > 0; --k) polygon.push_back(values.next_index(p.type));
            if (polygon.size() < 3) bad("PLY face " + std::to_string(i) + " has " + std::to_string(polygon.size()) + " vertices");
            add_fan(mesh, polygon);
        }
    }
}

void skip_ply_element(const PlyElement& e, PlyValues& values, uint64_t& i) {
    uint64_t record = 0;
    bool fixed = true;
    for (const PlyProperty& p : e.properties) {
        fixed = fixed && !p.is_list;
        record += ply_size(p.type);
    }
    if (fixed && e.count <= std::numeric_limits<uint64_t>::max() / std::max<uint64_t>(record, 1) &&
        values.skip_bytes(e.count * record)) {
        return;
    }
    for (i = 0; i < e.count; ++i) {
        for (const PlyProperty& p : e.properties) skip_property(p, values);
    }
}

TriangleMesh read_ply(const Bytes& bytes) {
    const PlyHeader header = read_ply_header(std::string_view((const char*)bytes.data(), bytes.size()));
    if (std::none_of(header.elements.begin(), header.elements.end(), [](const PlyElement& e) { return e.name == "vertex"; })) {
        bad("PLY file has no vertex element");
    }
    PlyValues values(header, bytes);
    TriangleMesh mesh;
    for (const PlyElement& e : header.elements) {
        uint64_t i = 0;
        try {
            if (e.name == "vertex") read_ply_vertices(e, values, mesh, i);
            else if (e.name == "face") read_ply_faces(e, values, mesh, i);
            else skip_ply_element(e, values, i);
        } catch (const PlyEnd&) {
            bad("file ends at " + e.name + " " + std::to_string(i) + " of " + std::to_string(e.count) + " (truncated)");
        }
    }
    return mesh;
}

// ---- STL -------------------------------------------------------------------

uint32_t le_u32(const uint8_t* p) { return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24; }

float le_f32(const uint8_t* p) {
    uint32_t bits = le_u32(p);
    float f;
    std::memcpy(&f, &bits, 4);
    return f;
}

// STL stores a triangle soup; welding by exact position restores the sharing.
TriangleMesh indexed_from_soup(std::vector<Vec3> corners) {
    TriangleMesh soup;
    soup.vertices = std::move(corners);
    for (uint32_t k = 0; k + 2 < soup.vertices.size(); k += 3) soup.triangles.push_back({k, k + 1, k + 2});
    return weld_vertices(soup);
}

TriangleMesh read_binary_stl(const Bytes& bytes, uint32_t n) {
    std::vector<Vec3> corners;
    corners.reserve((size_t)n * 3);
    for (uint32_t t = 0; t < n; ++t) {
        const uint8_t* record = bytes.data() + 84 + (size_t)t * 50 + 12;  // skips the facet normal
        for (int v = 0; v < 3; ++v) {
            const uint8_t* p = record + 12 * v;
            corners.push_back({le_f32(p), le_f32(p + 4), le_f32(p + 8)});
        }
    }
    return indexed_from_soup(std::move(corners));
}

TriangleMesh read_ascii_stl(std::string_view text) {
    std::vector<Vec3> corners, loop;
    LineReader lines(text);
    std::string_view line;
    std::vector<std::string_view> tokens;
    bool in_loop = false, ended = false;
    while (lines.next(line)) {
        split(line, tokens);
        if (tokens.empty()) continue;
        const std::string_view word = tokens[0];
        if (word == "facet" || word == "endfacet") continue;  // facet normals are unused: the vertex order says it
        if (word == "solid" || word == "endsolid") {  // a file may hold several solids; names are unused
            ended = word == "endsolid";
        } else if (word == "outer") {
            in_loop = true;
            loop.clear();
        } else if (word == "vertex" && in_loop) {
            if (tokens.size() < 4) bad(at_line(lines.line()) + "a vertex needs x y z");
            loop.push_back(parse_point(tokens, 1, lines.line()));
        } else if (word == "endloop" && in_loop) {
            if (loop.size() < 3) bad(at_line(lines.line()) + "a facet needs at least 3 vertices");
            for (size_t k = 1; k + 1 < loop.size(); ++k) corners.insert(corners.end(), {loop[0], loop[k], loop[k + 1]});
            in_loop = false;
        } else {
            bad(at_line(lines.line()) + "unexpected '" + std::string(word.substr(0, 40)) + "' in an ASCII STL");
        }
    }
    if (!ended) bad("file ends before 'endsolid' (truncated)");
    return indexed_from_soup(std::move(corners));
}

bool starts_with_solid(const Bytes& bytes) {
    size_t i = 0;
    while (i < bytes.size() && is_space((char)bytes[i])) ++i;
    return bytes.size() - i >= 5 && std::memcmp(bytes.data() + i, "solid", 5) == 0;
}

TriangleMesh read_stl(const Bytes& bytes) {
    // The size test comes first: many binary STLs also start with "solid".
    if (bytes.size() >= 84) {
        const uint32_t n = le_u32(bytes.data() + 80);
        const uint64_t expected = 84 + 50 * (uint64_t)n;
        if (bytes.size() == expected) return read_binary_stl(bytes, n);
        if (!starts_with_solid(bytes)) {
            bad("binary STL declares " + std::to_string(n) + " triangles (" + std::to_string(expected) +
                " bytes) but the file has " + std::to_string(bytes.size()) + " bytes (truncated or not an STL)");
        }
    } else if (!starts_with_solid(bytes)) {
        bad("too short for a binary STL (" + std::to_string(bytes.size()) + " bytes) and not an ASCII STL ('solid ...')");
    }
    return read_ascii_stl(std::string_view((const char*)bytes.data(), bytes.size()));
}

// ---- OFF -------------------------------------------------------------------

// Accepts OFF, COFF, NOFF, CNOFF and their ST variants: their extra per-vertex
// values (colors, normals, texture coordinates) come after x y z and are ignored.
bool is_off_keyword(std::string_view word) {
    if (word.size() < 3 || word.substr(word.size() - 3) != "OFF") return false;
    std::string_view prefix = word.substr(0, word.size() - 3);
    if (prefix.substr(0, 2) == "ST") prefix.remove_prefix(2);
    if (!prefix.empty() && prefix[0] == 'C') prefix.remove_prefix(1);
    if (!prefix.empty() && prefix[0] == 'N') prefix.remove_prefix(1);
    return prefix.empty();
}

// The next line that is not blank or a comment, split into tokens.
bool next_content_line(LineReader& lines, std::vector<std::string_view>& tokens) {
    std::string_view line;
    while (lines.next(line)) {
        split(strip_comment(line), tokens);
        if (!tokens.empty()) return true;
    }
    return false;
}

TriangleMesh read_off(std::string_view text) {
    LineReader lines(text);
    std::vector<std::string_view> tokens;
    if (!next_content_line(lines, tokens) || !is_off_keyword(tokens[0])) bad("does not start with an 'OFF' header");
    if (tokens.size() > 1 && tokens[1] == "BINARY") bad("binary OFF is not supported");
    std::vector<std::string_view> counts(tokens.begin() + 1, tokens.end());  // counts may share the header line
    if (counts.empty()) {
        if (!next_content_line(lines, tokens)) bad("file ends before the vertex and face counts (truncated)");
        counts = tokens;
    }
    if (counts.size() < 2) bad(at_line(lines.line()) + "expected vertex, face and edge counts");
    const uint64_t n_vertices = number_or_throw<uint64_t>(counts[0], lines.line());
    const uint64_t n_faces = number_or_throw<uint64_t>(counts[1], lines.line());
    if (n_vertices > std::numeric_limits<uint32_t>::max()) bad("too many vertices (" + std::to_string(n_vertices) + ")");

    TriangleMesh mesh;
    mesh.vertices.reserve((size_t)std::min<uint64_t>(n_vertices, text.size() / 6));
    for (uint64_t i = 0; i < n_vertices; ++i) {
        if (!next_content_line(lines, tokens)) {
            bad("file ends after " + std::to_string(i) + " of " + std::to_string(n_vertices) + " vertices (truncated)");
        }
        if (tokens.size() < 3) bad(at_line(lines.line()) + "a vertex needs x y z");
        mesh.vertices.push_back(parse_point(tokens, 0, lines.line()));
    }
    std::vector<uint32_t> polygon;
    for (uint64_t i = 0; i < n_faces; ++i) {
        if (!next_content_line(lines, tokens)) {
            bad("file ends after " + std::to_string(i) + " of " + std::to_string(n_faces) + " faces (truncated)");
        }
        const uint64_t n = number_or_throw<uint64_t>(tokens[0], lines.line());
        if (n < 3) bad(at_line(lines.line()) + "a face needs at least 3 vertices");
        if (n > tokens.size() - 1) bad(at_line(lines.line()) + "face has fewer indices than its count " + std::to_string(n));
        polygon.clear();
        for (uint64_t k = 1; k <= n; ++k) polygon.push_back(number_or_throw<uint32_t>(tokens[k], lines.line()));
        add_fan(mesh, polygon);  // anything after the indices is a face color
    }
    return mesh;
}

// ---- common ----------------------------------------------------------------

// What every reader's result must satisfy before anyone uses it.
void check_loaded(const TriangleMesh& mesh) {
    if (mesh.triangles.empty()) {
        bad(mesh.vertices.empty() ? "no vertices and no triangles"
                                  : "no triangles (" + std::to_string(mesh.vertices.size()) + " vertices, no faces)");
    }
    for (size_t i = 0; i < mesh.vertices.size(); ++i) {
        const Vec3 v = mesh.vertices[i];
        if (!std::isfinite(v.x) || !std::isfinite(v.y) || !std::isfinite(v.z)) {
            bad("vertex " + std::to_string(i) + " has a non-finite coordinate (" + std::to_string(v.x) + ", " +
                std::to_string(v.y) + ", " + std::to_string(v.z) + ")");
        }
    }
    for (size_t t = 0; t < mesh.triangles.size(); ++t) {
        for (uint32_t v : mesh.triangles[t]) {
            if (v >= mesh.vertices.size()) {
                bad("triangle " + std::to_string(t) + " uses vertex " + std::to_string(v) + " but there are only " +
                    std::to_string(mesh.vertices.size()) + " vertices (index out of range)");
            }
        }
    }
}

std::string unsupported(const std::string& ext) {
    const std::string supported = std::string(" (supported: ") + kMeshLoadFormats + ")";
    if (ext == ".glb" || ext == ".gltf") return "glTF is not supported, convert it first" + supported;
    if (ext.empty()) return "no file extension to tell the format" + supported;
    return "unsupported mesh format '" + ext + "'" + supported;
}

std::string_view as_text(const Bytes& bytes) { return std::string_view((const char*)bytes.data(), bytes.size()); }

// ---- writers ---------------------------------------------------------------

void check_savable(const TriangleMesh& mesh) {
    const size_t n = mesh.vertices.size();
    if (!mesh.normals.empty() && mesh.normals.size() != n) bad("has " + std::to_string(mesh.normals.size()) + " normals for " + std::to_string(n) + " vertices");
    if (!mesh.colors.empty() && mesh.colors.size() != n) bad("has " + std::to_string(mesh.colors.size()) + " colors for " + std::to_string(n) + " vertices");
    if (n > (size_t)std::numeric_limits<int32_t>::max()) bad("too many vertices for a PLY int index");
    for (const auto& t : mesh.triangles) {
        for (uint32_t v : t) {
            if (v >= n) bad("a triangle uses vertex " + std::to_string(v) + " of " + std::to_string(n));
        }
    }
}

void put_u32(Bytes& out, uint32_t u) {
    for (int k = 0; k < 4; ++k) out.push_back((uint8_t)(u >> (8 * k)));
}

void put_f32(Bytes& out, float f) {
    uint32_t bits;
    std::memcpy(&bits, &f, 4);
    put_u32(out, bits);
}

void put_vec3(Bytes& out, Vec3 v) {
    put_f32(out, v.x);
    put_f32(out, v.y);
    put_f32(out, v.z);
}

Bytes encode_ply(const TriangleMesh& mesh) {
    const bool normals = !mesh.normals.empty(), colors = !mesh.colors.empty();
    std::string header = "ply\nformat binary_little_endian 1.0\ncomment written by fusedngp\n";
    header += "element vertex " + std::to_string(mesh.vertices.size()) + "\n";
    header += "property float x\nproperty float y\nproperty float z\n";
    if (normals) header += "property float nx\nproperty float ny\nproperty float nz\n";
    if (colors) header += "property uchar red\nproperty uchar green\nproperty uchar blue\n";
    header += "element face " + std::to_string(mesh.triangles.size()) + "\n";
    header += "property list uchar int vertex_indices\nend_header\n";
    Bytes out(header.begin(), header.end());
    out.reserve(out.size() + mesh.vertices.size() * (12 + (normals ? 12 : 0) + (colors ? 3 : 0)) + mesh.triangles.size() * 13);
    for (size_t i = 0; i < mesh.vertices.size(); ++i) {
        put_vec3(out, mesh.vertices[i]);
        if (normals) put_vec3(out, mesh.normals[i]);
        if (colors) out.insert(out.end(), mesh.colors[i].begin(), mesh.colors[i].end());
    }
    for (const auto& t : mesh.triangles) {
        out.push_back(3);
        for (uint32_t v : t) put_u32(out, v);
    }
    return out;
}

// Shortest text that reads back to the same float.
void append_float(std::string& out, float f) {
    char buffer[32];
    auto result = std::to_chars(buffer, buffer + sizeof(buffer), f);
    out.push_back(' ');
    out.append(buffer, result.ptr);
}

std::string encode_obj(const TriangleMesh& mesh) {
    const bool normals = !mesh.normals.empty(), colors = !mesh.colors.empty();
    std::string out = "# written by fusedngp\n";
    out.reserve(mesh.vertices.size() * (normals ? 80 : 40) + mesh.triangles.size() * (normals ? 40 : 24));
    for (size_t i = 0; i < mesh.vertices.size(); ++i) {
        out += "v";
        for (int k = 0; k < 3; ++k) append_float(out, mesh.vertices[i][k]);
        for (int k = 0; colors && k < 3; ++k) append_float(out, (float)mesh.colors[i][k] / 255.f);
        out += "\n";
    }
    for (size_t i = 0; normals && i < mesh.normals.size(); ++i) {
        out += "vn";
        for (int k = 0; k < 3; ++k) append_float(out, mesh.normals[i][k]);
        out += "\n";
    }
    for (const auto& t : mesh.triangles) {
        out += "f";
        for (uint32_t v : t) {
            const std::string index = std::to_string(v + 1);
            out += " " + index;
            if (normals) out += "//" + index;
        }
        out += "\n";
    }
    return out;
}

bool loadable(const std::string& ext) { return ext == ".obj" || ext == ".ply" || ext == ".stl" || ext == ".off"; }

} // namespace

TriangleMesh load_mesh(const std::string& path) {
    const std::string ext = lower_extension(path);
    if (!loadable(ext)) throw InputError("cannot load mesh '" + path + "': " + unsupported(ext));
    return load_mesh_from_bytes(read_file_bytes(path), path);  // read_file_bytes' errors name the file
}

TriangleMesh load_mesh_from_bytes(const Bytes& bytes, const std::string& path) {
    const std::string ext = lower_extension(path);
    if (!loadable(ext)) throw InputError("cannot load mesh '" + path + "': " + unsupported(ext));
    try {
        if (bytes.empty()) bad("the file is empty");
        TriangleMesh mesh = ext == ".obj"   ? read_obj(as_text(bytes))
                            : ext == ".ply" ? read_ply(bytes)
                            : ext == ".stl" ? read_stl(bytes)
                                            : read_off(as_text(bytes));
        check_loaded(mesh);
        return mesh;
    } catch (const InputError& e) {
        throw InputError("cannot load mesh '" + path + "': " + e.what());
    }
}

void save_mesh(const std::string& path, const TriangleMesh& mesh) {
    const std::string ext = lower_extension(path);
    if (ext != ".ply" && ext != ".obj") {
        throw InputError("cannot save mesh '" + path + "': unsupported format '" + ext + "' (supported: .ply, .obj)");
    }
    try {
        check_savable(mesh);
    } catch (const InputError& e) {
        throw InputError("cannot save mesh '" + path + "': the mesh " + e.what());
    }
    if (ext == ".ply") {
        write_file_atomically(path, encode_ply(mesh));
    } else {
        const std::string text = encode_obj(mesh);
        write_file_atomically(path, text.data(), text.size());
    }
}

} // namespace fusedngp
