// Every loader a user can point fusedngp at, fed malformed input: images,
// configs, `--set` changes, safetensors files, snapshots, meshes, NeRF
// transforms.json scenes and command-line values. Each case writes its files
// into a folder of its own, runs the binary and expects: exit code 2, one line
// on stderr that names the file (or option) and the problem, no signal, and
// no output (the --out path absent, no new or temporary file in the folder).
//
// FUSEDNGP_BAD_INPUTS_TABLE=FILE writes the cases and the program's messages
// as the Markdown table of docs/RELIABILITY.md.
#include "cli_runner.h"
#include "io/image.h"
#include "io/safetensors.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <limits>
#include <set>
#include <string>
#include <vector>

namespace fs = std::filesystem;
using fusedngp::test::CliResult;
using fusedngp::test::count_lines;
using fusedngp::test::make_temp_dir;
using fusedngp::test::run_cli;

namespace {

using Bytes = std::vector<uint8_t>;

const std::string kAstronaut = std::string(FUSEDNGP_SOURCE_DIR) + "/data/astronaut.png";

const char* kTinyConfig = R"({
  "loss": {"otype": "L2"},
  "optimizer": {"otype": "Adam", "learning_rate": 1e-2},
  "encoding": {"otype": "HashGrid", "n_levels": 2, "n_features_per_level": 2, "log2_hashmap_size": 8,
               "base_resolution": 4, "per_level_scale": 2.0},
  "network": {"otype": "FullyFusedMLP", "n_neurons": 16, "n_hidden_layers": 1}
})";

Bytes read_file(const fs::path& p) {
    std::ifstream f(p, std::ios::binary);
    return Bytes((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
}

void write_file(const fs::path& p, const Bytes& bytes) {
    std::ofstream f(p, std::ios::binary);
    f.write(reinterpret_cast<const char*>(bytes.data()), (std::streamsize)bytes.size());
}

void write_file(const fs::path& p, const std::string& text) { write_file(p, Bytes(text.begin(), text.end())); }

void put_u32_be(Bytes& b, uint32_t v) {
    for (int s = 24; s >= 0; s -= 8) b.push_back((uint8_t)(v >> s));
}
void put_u32_le(Bytes& b, uint32_t v) {
    for (int s = 0; s < 32; s += 8) b.push_back((uint8_t)(v >> s));
}
void put_u64_le(Bytes& b, uint64_t v) {
    for (int s = 0; s < 64; s += 8) b.push_back((uint8_t)(v >> s));
}
void put_f32(Bytes& b, float v) {
    uint32_t u;
    std::memcpy(&u, &v, 4);
    put_u32_le(b, u);
}

// A PNG signature and an IHDR chunk claiming width x height RGB pixels, no data.
Bytes png_header_only(uint32_t width, uint32_t height) {
    Bytes b = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};
    put_u32_be(b, 13);
    for (char c : std::string("IHDR")) b.push_back((uint8_t)c);
    put_u32_be(b, width);
    put_u32_be(b, height);
    b.insert(b.end(), {8, 2, 0, 0, 0});  // 8 bits, RGB, deflate, no filter, no interlace
    put_u32_be(b, 0);                    // CRC (stb does not check it)
    put_u32_be(b, 0);
    for (char c : std::string("IEND")) b.push_back((uint8_t)c);
    put_u32_be(b, 0);
    return b;
}

// A safetensors file image from a header text and a data section.
Bytes safetensors_bytes(const std::string& header, const Bytes& data) {
    Bytes b;
    put_u64_le(b, header.size());
    b.insert(b.end(), header.begin(), header.end());
    b.insert(b.end(), data.begin(), data.end());
    return b;
}

// Binary STL: the header, the triangle count, then `written` triangles.
Bytes stl_bytes(uint32_t count, uint32_t written) {
    Bytes b(80, ' ');
    put_u32_le(b, count);
    for (uint32_t t = 0; t < written; ++t) {
        for (int i = 0; i < 12; ++i) put_f32(b, (float)((i + t) % 3));
        b.push_back(0);
        b.push_back(0);
    }
    return b;
}

std::string replace_all(std::string s, const std::string& from, const std::string& to) {
    for (size_t at = s.find(from); at != std::string::npos; at = s.find(from, at + to.size())) s.replace(at, from.size(), to);
    return s;
}

// Files every case may refer to: {IMG} a 16 x 16 RGB PNG, {GRAY} a 16 x 16
// one-channel PNG, {CFG} the tiny config, {SNAP} a snapshot trained on {IMG}
// for two steps, {W} its exported weights.
struct Shared {
    fs::path dir, img, gray, cfg, snap, weights;
};

const Shared& shared() {
    static const Shared s = [] {
        Shared r;
        r.dir = make_temp_dir("bad_inputs_shared");
        r.img = r.dir / "tiny.png";
        r.gray = r.dir / "gray.png";
        r.cfg = r.dir / "tiny.json";
        fusedngp::Image rgb = fusedngp::make_image(16, 16, 3, fusedngp::ColorSpace::Srgb, "tiny");
        for (size_t i = 0; i < rgb.pixels.size(); ++i) rgb.pixels[i] = (float)(i % 7) / 6.0f;
        fusedngp::save_png(rgb, r.img.string());
        fusedngp::Image g = fusedngp::make_image(16, 16, 1, fusedngp::ColorSpace::Srgb, "gray");
        for (size_t i = 0; i < g.pixels.size(); ++i) g.pixels[i] = (float)(i % 5) / 4.0f;
        fusedngp::save_png(g, r.gray.string());
        write_file(r.cfg, std::string(kTinyConfig));
        const fs::path run = r.dir / "run";
        CliResult t = run_cli("train --data " + r.img.string() + " --backend cpu --config " + r.cfg.string() +
                              " --steps 2 --batch 64 --eval-every 0 --out " + run.string());
        EXPECT_EQ(t.exit_code, 0) << t.err;
        r.snap = run / "snapshot.fusedngp";
        r.weights = r.dir / "weights.safetensors";
        CliResult e = run_cli("export " + r.snap.string() + " --out " + r.weights.string());
        EXPECT_EQ(e.exit_code, 0) << e.err;
        return r;
    }();
    return s;
}

// The snapshot with a change applied through our own reader and writer.
Bytes edited_snapshot(const std::function<void(fusedngp::SafetensorsContents&)>& edit) {
    fusedngp::SafetensorsContents c = fusedngp::read_safetensors(shared().snap.string());
    edit(c);
    return fusedngp::encode_safetensors(c.tensors, c.metadata);
}

// transforms.json with one 8 x 8 image beside it; `edit` changes the JSON.
void write_nerf_scene(const fs::path& dir, const std::function<void(nlohmann::json&)>& edit) {
    fusedngp::Image img = fusedngp::make_image(8, 8, 3, fusedngp::ColorSpace::Srgb, "view");
    fusedngp::save_png(img, (dir / "view.png").string());
    nlohmann::json identity = {{1, 0, 0, 0}, {0, 1, 0, 0}, {0, 0, 1, 3}, {0, 0, 0, 1}};
    nlohmann::json j = {{"camera_angle_x", 0.7}, {"frames", {{{"file_path", "view.png"}, {"transform_matrix", identity}}}}};
    edit(j);
    write_file(dir / "transforms.json", j.dump(2));
}

struct Case {
    std::string id;                               // unique; the case's folder name
    std::string group;                            // image, config, set, safetensors, snapshot, mesh, nerf, cli
    std::string input;                            // what is wrong, for the table
    std::function<void(const fs::path& dir)> make;  // writes the case's files into its folder
    std::string args;                             // {D}: the folder, {O}: the output path, see Shared
    std::string out;                              // the output's name in the folder
    std::vector<std::string> needles;             // the message names these (file or option, problem)
};

std::function<void(const fs::path&)> file(const std::string& name, Bytes bytes) {
    return [name, bytes](const fs::path& d) { write_file(d / name, bytes); };
}
std::function<void(const fs::path&)> text(const std::string& name, const std::string& t) {
    return file(name, Bytes(t.begin(), t.end()));
}
std::function<void(const fs::path&)> nothing() {
    return [](const fs::path&) {};
}
std::function<void(const fs::path&)> config(const std::string& t) { return text("cfg.json", t); }
std::function<void(const fs::path&)> scene(const std::function<void(nlohmann::json&)>& edit) {
    return [edit](const fs::path& d) { write_nerf_scene(d, edit); };
}
std::function<void(const fs::path&)> snapshot_edit(const std::string& name,
                                                   const std::function<void(fusedngp::SafetensorsContents&)>& e) {
    return [name, e](const fs::path& d) { write_file(d / name, edited_snapshot(e)); };
}

const std::string kTrainImage = "train --data {D}/{F} --backend cpu --config {CFG} --steps 2 --batch 64 --eval-every 0 --out {O}";
const std::string kTrainConfig = "train --data {IMG} --backend cpu --config {D}/cfg.json --steps 2 --batch 64 --eval-every 0 --out {O}";
const std::string kTrainMesh = "train --data {D}/{F} --backend cpu --steps 2 --batch 64 --eval-every 0 --out {O}";
const std::string kTrainNerf = "train --data {D}/transforms.json --backend cpu --steps 2 --batch 64 --eval-every 0 --out {O}";
const std::string kRender = "render {D}/{F} --backend cpu --out {O}";
const std::string kExport = "export {D}/{F} --out {O}";
const std::string kResume = "train --data {IMG} --backend cpu --resume {D}/{F} --steps 4 --batch 64 --eval-every 0 --out {O}";

Case with_file(Case c, const std::string& f) {
    c.args = replace_all(c.args, "{F}", f);
    return c;
}

std::vector<Case> cases() {
    std::vector<Case> v;
    auto add = [&](const std::string& id, const std::string& group, const std::string& input,
                   std::function<void(const fs::path&)> make, const std::string& args, const std::string& out,
                   std::vector<std::string> needles, const std::string& f = "") {
        v.push_back(with_file(Case{id, group, input, std::move(make), args, out, std::move(needles)}, f));
    };
    const Bytes astronaut = read_file(kAstronaut);
    const Bytes third(astronaut.begin(), astronaut.begin() + (long)(astronaut.size() / 3));

    // ---- images
    add("png_truncated", "image", "PNG cut after a third of its bytes", file("cut.png", third), kTrainImage, "out",
        {"cut.png", "corrupt or truncated"}, "cut.png");
    add("png_zero_bytes", "image", "PNG of zero bytes", file("empty.png", {}), kTrainImage, "out",
        {"empty.png", "empty"}, "empty.png");
    add("png_text", "image", "a text file named .png", text("notes.png", "these are notes, not pixels\n"), kTrainImage,
        "out", {"notes.png", "not a supported image"}, "notes.png");
    add("png_huge_dimensions", "image", "PNG header claiming 100000 x 100000 pixels, no data",
        file("huge.png", png_header_only(100000, 100000)), kTrainImage, "out", {"huge.png", "100000x100000"}, "huge.png");
    add("png_zero_width", "image", "PNG header claiming 0 x 16 pixels", file("zero.png", png_header_only(0, 16)),
        kTrainImage, "out", {"zero.png", "0x16"}, "zero.png");
    add("jpeg_truncated", "image", "JPEG that ends after its JFIF header",
        file("cut.jpg", {0xFF, 0xD8, 0xFF, 0xE0, 0, 16, 'J', 'F', 'I', 'F', 0, 1, 1, 0, 0, 1, 0, 1, 0, 0}),
        kTrainImage, "out", {"cut.jpg"}, "cut.jpg");
    add("image_wrong_extension", "image", "a PNG named .txt", file("astronaut.txt", third), kTrainImage, "out",
        {"astronaut.txt", "extension"}, "astronaut.txt");
    add("exr_truncated", "image", "EXR cut in half",
        [](const fs::path& d) {
            fusedngp::Image img = fusedngp::make_image(8, 8, 3, fusedngp::ColorSpace::Linear, "x");
            fusedngp::save_exr(img, (d / "full.exr").string());
            Bytes b = read_file(d / "full.exr");
            b.resize(b.size() / 2);
            write_file(d / "cut.exr", b);
            fs::remove(d / "full.exr");
        },
        kTrainImage, "out", {"cut.exr"}, "cut.exr");
    add("exr_huge_dimensions", "image", "EXR whose dataWindow claims 1000000 x 1000000 pixels",
        [](const fs::path& d) {
            fusedngp::Image img = fusedngp::make_image(8, 8, 3, fusedngp::ColorSpace::Linear, "x");
            fusedngp::save_exr(img, (d / "full.exr").string());
            Bytes b = read_file(d / "full.exr");
            const std::string key("dataWindow\0box2i\0", 17);
            auto at = std::search(b.begin(), b.end(), key.begin(), key.end());
            ASSERT_NE(at, b.end());
            const size_t box = (size_t)(at - b.begin()) + key.size() + 4;  // after the attribute's size
            const int32_t big = 999999;
            std::memcpy(&b[box + 8], &big, 4);
            std::memcpy(&b[box + 12], &big, 4);
            write_file(d / "huge.exr", b);
            fs::remove(d / "full.exr");
        },
        kTrainImage, "out", {"huge.exr"}, "huge.exr");
    add("hdr_truncated", "image", "Radiance HDR header claiming 64 x 64, 10 bytes of pixels",
        [](const fs::path& d) {
            std::string t = "#?RADIANCE\nFORMAT=32-bit_rle_rgbe\n\n-Y 64 +X 64\n";
            t += std::string(10, '\x7f');
            write_file(d / "cut.hdr", t);
        },
        kTrainImage, "out", {"cut.hdr"}, "cut.hdr");
    add("hdr_zero_length_run", "image", "Radiance HDR scanline with a run of length zero",
        [](const fs::path& d) {
            std::string t = "#?RADIANCE\nFORMAT=32-bit_rle_rgbe\n\n-Y 1 +X 8\n";
            t += std::string("\x02\x02\x00\x08", 4) + std::string(40, '\0');
            write_file(d / "zero_run.hdr", t);
        },
        kTrainImage, "out", {"zero_run.hdr", "length zero"}, "zero_run.hdr");
    add("bmp_zero_size", "image", "BMP header claiming 0 x 0 pixels",
        [](const fs::path& d) {
            Bytes b(54, 0);
            b[0] = 'B';
            b[1] = 'M';
            b[2] = 54;
            b[10] = 54;
            b[14] = 40;
            b[26] = 1;
            b[28] = 24;
            write_file(d / "zero.bmp", b);
        },
        kTrainImage, "out", {"zero.bmp"}, "zero.bmp");
    add("image_is_a_folder", "image", "--mode image on a folder named .png",
        [](const fs::path& d) { fs::create_directories(d / "folder.png"); },
        kTrainImage + " --mode image", "out", {"folder.png"}, "folder.png");
    add("image_missing", "image", "an image path that does not exist", nothing(), kTrainImage, "out",
        {"missing.png"}, "missing.png");

    // ---- configs
    add("config_json_syntax", "config", "config with a trailing comma", config(R"({"network": {"n_neurons": 16,}})"),
        kTrainConfig, "out", {"cfg.json"});
    add("config_wrong_type", "config", "n_neurons is a string", config(R"({"network": {"otype": "FullyFusedMLP", "n_neurons": "sixteen"}})"),
        kTrainConfig, "out", {"n_neurons"});
    add("config_unknown_otype", "config", "encoding otype \"Nope\"", config(R"({"encoding": {"otype": "Nope"}})"),
        kTrainConfig, "out", {"encoding.otype", "Nope"});
    add("config_hashmap_too_large", "config", "log2_hashmap_size 40",
        config(R"({"encoding": {"otype": "HashGrid", "log2_hashmap_size": 40}})"), kTrainConfig, "out",
        {"log2_hashmap_size"});
    add("config_zero_neurons", "config", "n_neurons 0", config(R"({"network": {"otype": "FullyFusedMLP", "n_neurons": 0}})"), kTrainConfig,
        "out", {"n_neurons"});
    add("config_negative_learning_rate", "config", "learning_rate -1",
        config(R"({"optimizer": {"otype": "Adam", "learning_rate": -1}})"), kTrainConfig, "out", {"learning_rate"});
    add("config_too_many_layers", "config", "n_hidden_layers 4000000000",
        config(R"({"network": {"otype": "FullyFusedMLP", "n_hidden_layers": 4000000000}})"), kTrainConfig, "out",
        {"n_hidden_layers"});
    add("config_huge_width", "config", "n_neurons 1000000",
        config(R"({"network": {"otype": "FullyFusedMLP", "n_neurons": 1000000}})"), kTrainConfig, "out",
        {"n_neurons", "2^31"});
    add("config_not_an_object", "config", "config is a JSON array", config("[1, 2, 3]"), kTrainConfig, "out",
        {"cfg.json"});
    add("config_empty", "config", "config file of zero bytes", config(""), kTrainConfig, "out", {"cfg.json"});
    add("config_missing", "config", "a config path that does not exist", nothing(),
        replace_all(kTrainConfig, "{D}/cfg.json", "{D}/none.json"), "out", {"none.json"});
#ifdef FUSEDNGP_HAVE_GUI
    // ---- gui --set (checked before a window opens)
    const std::string kGui = "gui {IMG} --backend cpu --frames 1 --screenshot {O} ";
    add("set_no_frame", "set", "--set without =VALUE@FRAME", nothing(), kGui + "--set network.n_neurons", "out.png",
        {"--set", "network.n_neurons"});
    add("set_unknown_key", "set", "--set of a key that cannot change", nothing(), kGui + "--set network.colour=1@5",
        "out.png", {"--set", "network.colour"});
    add("set_bad_value", "set", "--set n_neurons to a word", nothing(), kGui + "--set network.n_neurons=many@5",
        "out.png", {"--set", "network.n_neurons", "many"});
#endif

    // ---- safetensors (render and export read them)
    add("st_shorter_than_length", "safetensors", "5 bytes: no 8-byte header length", file("short.safetensors", {1, 2, 3, 4, 5}),
        kRender, "out.png", {"short.safetensors"}, "short.safetensors");
    add("st_header_past_eof", "safetensors", "header length 1000 in a 40-byte file",
        [](const fs::path& d) {
            Bytes b;
            put_u64_le(b, 1000);
            b.resize(40, ' ');
            write_file(d / "past.safetensors", b);
        },
        kRender, "out.png", {"past.safetensors"}, "past.safetensors");
    add("st_header_length_huge", "safetensors", "header length 2^62",
        [](const fs::path& d) {
            Bytes b;
            put_u64_le(b, 1ull << 62);
            b.resize(64, ' ');
            write_file(d / "huge.safetensors", b);
        },
        kExport, "out.safetensors", {"huge.safetensors"}, "huge.safetensors");
    add("st_bad_json", "safetensors", "header is not JSON", file("bad.safetensors", safetensors_bytes("{not json}      ", {})),
        kRender, "out.png", {"bad.safetensors"}, "bad.safetensors");
    add("st_header_not_object", "safetensors", "header is a JSON array",
        file("array.safetensors", safetensors_bytes("[1, 2]  ", {})), kRender, "out.png", {"array.safetensors"},
        "array.safetensors");
    add("st_unknown_dtype", "safetensors", "dtype \"Q7\"",
        file("dtype.safetensors", safetensors_bytes(R"({"t": {"dtype": "Q7", "shape": [2], "data_offsets": [0, 8]}})",
                                                    Bytes(8, 0))),
        kRender, "out.png", {"dtype.safetensors", "Q7"}, "dtype.safetensors");
    add("st_shape_offset_mismatch", "safetensors", "shape [3] F32 with 8 bytes of data",
        file("shape.safetensors", safetensors_bytes(R"({"t": {"dtype": "F32", "shape": [3], "data_offsets": [0, 8]}})",
                                                    Bytes(8, 0))),
        kExport, "out.safetensors", {"shape.safetensors"}, "shape.safetensors");
    add("st_overlapping_offsets", "safetensors", "two tensors sharing bytes 4..8",
        file("overlap.safetensors",
             safetensors_bytes(R"({"a": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]},)"
                               R"( "b": {"dtype": "F32", "shape": [2], "data_offsets": [4, 12]}})",
                               Bytes(12, 0))),
        kRender, "out.png", {"overlap.safetensors"}, "overlap.safetensors");
    add("st_offsets_past_end", "safetensors", "data_offsets [0, 64] with 8 bytes of data",
        file("past_end.safetensors",
             safetensors_bytes(R"({"t": {"dtype": "F32", "shape": [16], "data_offsets": [0, 64]}})", Bytes(8, 0))),
        kRender, "out.png", {"past_end.safetensors"}, "past_end.safetensors");
    add("st_negative_shape", "safetensors", "shape [-2]",
        file("negative.safetensors",
             safetensors_bytes(R"({"t": {"dtype": "F32", "shape": [-2], "data_offsets": [0, 8]}})", Bytes(8, 0))),
        kRender, "out.png", {"negative.safetensors"}, "negative.safetensors");
    add("st_metadata_not_string", "safetensors", "__metadata__ value is a number",
        file("meta.safetensors",
             safetensors_bytes(R"({"__metadata__": {"fusedngp.format": 5}, "t": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]}})",
                               Bytes(8, 0))),
        kRender, "out.png", {"meta.safetensors"}, "meta.safetensors");
    add("st_not_fusedngp", "safetensors", "valid safetensors without fusedngp metadata",
        file("other.safetensors",
             safetensors_bytes(R"({"t": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]}})", Bytes(8, 0))),
        kRender, "out.png", {"other.safetensors", "fusedngp.format"}, "other.safetensors");
    add("weights_missing_tensor", "safetensors", "exported weights with one tensor removed",
        [](const fs::path& d) {
            fusedngp::SafetensorsContents c = fusedngp::read_safetensors(shared().weights.string());
            c.tensors.pop_back();
            write_file(d / "weights.safetensors", fusedngp::encode_safetensors(c.tensors, c.metadata));
        },
        kRender, "out.png", {"weights.safetensors"}, "weights.safetensors");

    // ---- snapshots
    add("snapshot_truncated", "snapshot", "snapshot cut in half",
        [](const fs::path& d) {
            Bytes b = read_file(shared().snap);
            b.resize(b.size() / 2);
            write_file(d / "half.fusedngp", b);
        },
        kResume, "out", {"half.fusedngp"}, "half.fusedngp");
    add("snapshot_wrong_magic", "snapshot", "a ZIP file named .fusedngp",
        file("zip.fusedngp", {'P', 'K', 3, 4, 20, 0, 0, 0, 8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}), kRender, "out.png",
        {"zip.fusedngp"}, "zip.fusedngp");
    add("snapshot_wrong_version", "snapshot", "fusedngp.format \"snapshot-v9\"",
        snapshot_edit("v9.fusedngp", [](auto& c) { c.metadata["fusedngp.format"] = "snapshot-v9"; }), kResume, "out",
        {"v9.fusedngp", "snapshot-v9"}, "v9.fusedngp");
    add("snapshot_bad_config", "snapshot", "stored config is not JSON",
        snapshot_edit("config.fusedngp", [](auto& c) { c.metadata["config"] = "{\"network\": "; }), kRender, "out.png",
        {"config.fusedngp", "config"}, "config.fusedngp");
    add("snapshot_params_short", "snapshot", "params tensor with half its values",
        snapshot_edit("short.fusedngp",
                      [](auto& c) {
                          for (auto& t : c.tensors)
                              if (t.name == "params") {
                                  t.values.resize(t.values.size() / 2);
                                  t.shape = {t.values.size()};
                              }
                      }),
        kExport, "out.safetensors", {"short.fusedngp"}, "short.fusedngp");
    add("snapshot_params_nan", "snapshot", "params payload overwritten with NaN",
        snapshot_edit("nan.fusedngp",
                      [](auto& c) {
                          for (auto& t : c.tensors)
                              if (t.name == "params")
                                  std::fill(t.values.begin(), t.values.end(), std::numeric_limits<float>::quiet_NaN());
                      }),
        kRender, "out.png", {"nan.fusedngp", "params"}, "nan.fusedngp");
    add("snapshot_step_not_number", "snapshot", "step metadata \"abc\"",
        snapshot_edit("step.fusedngp", [](auto& c) { c.metadata["step"] = "abc"; }), kResume, "out",
        {"step.fusedngp", "step"}, "step.fusedngp");
    add("snapshot_wrong_data", "snapshot", "RGB snapshot resumed on a one-channel image",
        [](const fs::path& d) { fs::copy_file(shared().snap, d / "rgb.fusedngp"); },
        replace_all(kResume, "{IMG}", "{GRAY}"), "out", {"rgb.fusedngp", "gray.png"}, "rgb.fusedngp");

    // ---- meshes
    add("obj_empty", "mesh", "OBJ of zero bytes", text("empty.obj", ""), kTrainMesh, "out", {"empty.obj"}, "empty.obj");
    add("obj_nan_vertex", "mesh", "OBJ vertex with a nan coordinate",
        text("nan.obj", "v 0 0 nan\nv 1 0 0\nv 0 1 0\nf 1 2 3\n"), kTrainMesh, "out", {"nan.obj"}, "nan.obj");
    add("obj_index_out_of_range", "mesh", "OBJ face index 9 of 3 vertices",
        text("index.obj", "v 0 0 0\nv 1 0 0\nv 0 1 0\nf 1 2 9\n"), kTrainMesh, "out", {"index.obj"}, "index.obj");
    add("obj_no_triangles", "mesh", "OBJ with vertices and no faces", text("points.obj", "v 0 0 0\nv 1 0 0\nv 0 1 0\n"),
        kTrainMesh, "out", {"points.obj"}, "points.obj");
    add("obj_non_numeric", "mesh", "OBJ vertex \"v 1 2 banana\"", text("banana.obj", "v 1 2 banana\nf 1 1 1\n"),
        kTrainMesh, "out", {"banana.obj"}, "banana.obj");
    add("obj_is_png", "mesh", "a PNG named .obj", file("picture.obj", third), kTrainMesh, "out", {"picture.obj"},
        "picture.obj");
    add("ply_binary_truncated", "mesh", "binary PLY cut inside its vertex data",
        [](const fs::path& d) {
            std::string h = "ply\nformat binary_little_endian 1.0\nelement vertex 8\nproperty float x\nproperty float y\n"
                            "property float z\nelement face 12\nproperty list uchar int vertex_indices\nend_header\n";
            Bytes b(h.begin(), h.end());
            for (int i = 0; i < 10; ++i) put_f32(b, 0.5f);
            write_file(d / "cut.ply", b);
        },
        kTrainMesh, "out", {"cut.ply"}, "cut.ply");
    add("ply_huge_count", "mesh", "PLY header claiming 10^12 vertices",
        text("huge.ply", "ply\nformat binary_little_endian 1.0\nelement vertex 1000000000000\nproperty float x\n"
                         "property float y\nproperty float z\nelement face 1\nproperty list uchar int vertex_indices\n"
                         "end_header\n"),
        kTrainMesh, "out", {"huge.ply"}, "huge.ply");
    add("ply_ascii_non_numeric", "mesh", "ASCII PLY with a word for a coordinate",
        text("word.ply", "ply\nformat ascii 1.0\nelement vertex 3\nproperty float x\nproperty float y\nproperty float z\n"
                         "element face 1\nproperty list uchar int vertex_indices\nend_header\n0 0 0\n1 zero 0\n0 1 0\n"
                         "3 0 1 2\n"),
        kTrainMesh, "out", {"word.ply"}, "word.ply");
    add("stl_binary_truncated", "mesh", "binary STL claiming 100 triangles, holding 2", file("cut.stl", stl_bytes(100, 2)),
        kTrainMesh, "out", {"cut.stl"}, "cut.stl");
    add("stl_no_triangles", "mesh", "binary STL with 0 triangles", file("none.stl", stl_bytes(0, 0)), kTrainMesh, "out",
        {"none.stl"}, "none.stl");
    add("stl_ascii_no_facets", "mesh", "ASCII STL without facets", text("solid.stl", "solid x\nendsolid x\n"),
        kTrainMesh, "out", {"solid.stl"}, "solid.stl");
    add("off_truncated", "mesh", "OFF claiming 4 vertices, holding 2", text("cut.off", "OFF\n4 2 0\n0 0 0\n1 0 0\n"),
        kTrainMesh, "out", {"cut.off"}, "cut.off");
    add("off_bad_counts", "mesh", "OFF with a word for the vertex count", text("word.off", "OFF\nfour 2 0\n"), kTrainMesh,
        "out", {"word.off"}, "word.off");
    add("mesh_unsupported_extension", "mesh", "a .glb file", text("mesh.glb", "glTF"), kTrainMesh, "out", {"mesh.glb"},
        "mesh.glb");

    // ---- NeRF scenes
    add("nerf_missing_frames", "nerf", "transforms.json without \"frames\"", scene([](auto& j) { j.erase("frames"); }),
        kTrainNerf, "out", {"transforms.json", "frames"});
    add("nerf_empty_frames", "nerf", "\"frames\": []", scene([](auto& j) { j["frames"] = nlohmann::json::array(); }),
        kTrainNerf, "out", {"transforms.json", "frames"});
    add("nerf_missing_image", "nerf", "the only frame's image does not exist",
        scene([](auto& j) { j["frames"][0]["file_path"] = "gone.png"; }), kTrainNerf, "out", {"transforms.json", "gone.png"});
    add("nerf_matrix_3x3", "nerf", "transform_matrix of 3 x 3",
        scene([](auto& j) { j["frames"][0]["transform_matrix"] = {{1, 0, 0}, {0, 1, 0}, {0, 0, 1}}; }), kTrainNerf, "out",
        {"transforms.json", "transform_matrix"});
    add("nerf_matrix_non_numeric", "nerf", "transform_matrix entry \"one\"",
        scene([](auto& j) { j["frames"][0]["transform_matrix"][0][0] = "one"; }), kTrainNerf, "out",
        {"transforms.json", "transform_matrix"});
    add("nerf_missing_camera_angle", "nerf", "no camera_angle_x or focal length",
        scene([](auto& j) { j.erase("camera_angle_x"); }), kTrainNerf, "out", {"transforms.json", "camera_angle_x"});
    add("nerf_camera_angle_string", "nerf", "camera_angle_x \"wide\"", scene([](auto& j) { j["camera_angle_x"] = "wide"; }),
        kTrainNerf, "out", {"transforms.json", "camera_angle_x"});
    add("nerf_camera_angle_out_of_range", "nerf", "camera_angle_x 7 (over pi)",
        scene([](auto& j) { j["camera_angle_x"] = 7; }), kTrainNerf, "out", {"transforms.json", "camera_angle_x"});
    add("nerf_json_syntax", "nerf", "transforms.json cut mid-array", text("transforms.json", "{\"frames\": ["),
        kTrainNerf, "out", {"transforms.json"});
    add("nerf_folder_without_transforms", "nerf", "a folder with no transforms file",
        [](const fs::path& d) { fs::create_directories(d / "scene"); },
        replace_all(kTrainNerf, "{D}/transforms.json", "{D}/scene"), "out", {"scene", "transforms"});

    // ---- command-line values
    const std::string kTrainOk = "train --data {IMG} --backend cpu --config {CFG} --batch 64 --eval-every 0 --out {O} ";
    add("cli_negative_steps", "cli", "--steps -3", nothing(), kTrainOk + "--steps -3", "out", {"--steps"});
    add("cli_nan_seconds", "cli", "--seconds nan", nothing(), kTrainOk + "--seconds nan", "out", {"--seconds", "nan"});
    add("cli_inf_eval_every", "cli", "--eval-every inf", nothing(), kTrainOk + "--eval-every inf", "out",
        {"--eval-every", "inf"});
    add("cli_huge_batch", "cli", "--batch 99999999999 (over 2^32)", nothing(), "train --data {IMG} --backend cpu --config {CFG} --steps 2 --batch 99999999999 --out {O}",
        "out", {"--batch"});
    add("cli_negative_seed", "cli", "--seed -1", nothing(), kTrainOk + "--steps 2 --seed -1", "out", {"--seed"});
    add("cli_unknown_flag", "cli", "--frobnicate", nothing(), kTrainOk + "--steps 2 --frobnicate", "out",
        {"--frobnicate"});
    add("cli_unknown_backend", "cli", "--backend tpu", nothing(), "train --data {IMG} --config {CFG} --steps 2 --backend tpu --out {O}", "out", {"tpu"});
    add("cli_unknown_mode", "cli", "--mode voxels", nothing(), kTrainOk + "--steps 2 --mode voxels", "out", {"voxels"});
    add("cli_render_negative_width", "cli", "render --width -5", nothing(), "render {SNAP} --width -5 --out {O}",
        "out.png", {"--width"});
    add("cli_render_huge_size", "cli", "render --width 100000 --height 100000", nothing(),
        "render {SNAP} --backend cpu --width 100000 --height 100000 --out {O}", "out.png", {"--width"});
    add("cli_render_jpg", "cli", "render --out x.jpg", nothing(), "render {SNAP} --out {O}", "out.jpg", {"out.jpg"});
    add("cli_export_bf16", "cli", "export --dtype bf16", nothing(), "export {SNAP} --dtype bf16 --out {O}",
        "out.safetensors", {"--dtype", "bf16"});
    add("cli_mesh_huge_resolution", "cli", "mesh --resolution 100000", nothing(),
        "mesh {SNAP} --resolution 100000 --out {O}", "out.ply", {"--resolution"});
    add("cli_bad_camera", "cli", "render --camera orbit:a,b,c", nothing(), "render {SNAP} --camera orbit:a,b,c --out {O}",
        "out.png", {"--camera"});
    add("cli_nerf_bad_background", "cli", "train --background 2,0,0 (NeRF)", scene([](auto&) {}),
        kTrainNerf + " --background 2,0,0", "out", {"--background"});
    return v;
}

std::string substitute(const std::string& args, const fs::path& dir, const fs::path& out) {
    const Shared& s = shared();
    std::string a = replace_all(args, "{D}", dir.string());
    a = replace_all(a, "{O}", out.string());
    a = replace_all(a, "{IMG}", s.img.string());
    a = replace_all(a, "{GRAY}", s.gray.string());
    a = replace_all(a, "{CFG}", s.cfg.string());
    a = replace_all(a, "{SNAP}", s.snap.string());
    return a;
}

std::set<std::string> entries(const fs::path& dir) {
    std::set<std::string> names;
    for (const auto& e : fs::recursive_directory_iterator(dir)) names.insert(fs::relative(e.path(), dir).string());
    return names;
}

// The message as the table shows it: the case's folder and the shared files
// by name only.
std::string for_table(std::string message, const fs::path& dir) {
    message = replace_all(message, dir.string() + "/", "");
    message = replace_all(message, shared().dir.string() + "/", "");
    while (!message.empty() && message.back() == '\n') message.pop_back();
    return replace_all(message, "|", "\\|");
}

std::string command_for_table(const Case& c) {
    std::string a = replace_all(c.args, "{D}/", "");
    a = replace_all(a, " --backend cpu", "");
    a = replace_all(a, " --config {CFG}", "");
    a = replace_all(a, " --steps 2 --batch 64 --eval-every 0", "");
    a = replace_all(a, " --batch 64 --eval-every 0", "");
    a = replace_all(a, "{O}", c.out);
    a = replace_all(a, "{IMG}", "tiny.png");
    a = replace_all(a, "{GRAY}", "gray.png");
    a = replace_all(a, "{SNAP}", "snapshot.fusedngp");
    return replace_all(a, "|", "\\|");
}

} // namespace

TEST(BadInputs, EveryCaseIsAOneLineErrorWithExitTwoAndNoOutput) {
    const std::vector<Case> all = cases();
    ASSERT_GE(all.size(), 40u);
    std::set<std::string> ids;
    for (const Case& c : all) ASSERT_TRUE(ids.insert(c.id).second) << "duplicate case " << c.id;

    const fs::path root = make_temp_dir("bad_inputs");
    std::string table = "| # | kind | input | command | what the program says | exit | output written |\n"
                        "|---|---|---|---|---|---|---|\n";
    int n = 0;
    for (const Case& c : all) {
        SCOPED_TRACE(c.id);
        const fs::path dir = root / c.id;
        fs::create_directories(dir);
        c.make(dir);
        const std::set<std::string> before = entries(dir);
        const fs::path out = dir / c.out;
        const std::string args = substitute(c.args, dir, out);
        const CliResult r = run_cli(args);

        EXPECT_EQ(r.exit_code, 2) << args << "\nstdout: " << r.out << "\nstderr: " << r.err;
        EXPECT_LT(r.exit_code, 128) << "killed by a signal: " << args;
        EXPECT_EQ(count_lines(r.err), 1) << r.err;
        EXPECT_EQ(r.err.rfind("fusedngp: ", 0), 0u) << r.err;
        EXPECT_EQ(r.err.find("internal error"), std::string::npos) << r.err;
        for (const std::string& needle : c.needles)
            EXPECT_NE(r.err.find(needle), std::string::npos) << "\"" << needle << "\" not in: " << r.err;
        EXPECT_FALSE(fs::exists(out)) << out;
        EXPECT_EQ(entries(dir), before) << "the run left files in " << dir;

        table += "| " + std::to_string(++n) + " | " + c.group + " | " + c.input + " | `fusedngp " + command_for_table(c) +
                 "` | " + for_table(r.err, dir) + " | " + std::to_string(r.exit_code) + " | " +
                 (fs::exists(out) ? "yes" : "none") + " |\n";
    }
    if (const char* path = std::getenv("FUSEDNGP_BAD_INPUTS_TABLE")) write_file(path, table);
    fs::remove_all(root);
}
