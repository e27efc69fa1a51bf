#version 330 core
// Ground truth, prediction or error map. Values are the image's stored values;
// linear images (EXR) are sRGB-encoded for display.
uniform sampler2D u_truth;
uniform sampler2D u_prediction;
uniform int u_mode;          // 0 truth, 1 prediction, 2 error map
uniform bool u_linear;       // the image is linear: encode for display
uniform float u_error_gain;  // error map: |prediction - truth| * gain
in vec2 v_uv;
out vec4 frag_color;

vec3 linear_to_srgb(vec3 c) {
    c = clamp(c, 0.0, 1.0);
    return mix(c * 12.92, 1.055 * pow(c, vec3(1.0 / 2.4)) - 0.055, step(0.0031308, c));
}

// A perceptually ordered dark-to-bright ramp (approximates inferno).
vec3 heat(float t) {
    t = clamp(t, 0.0, 1.0);
    vec3 a = vec3(0.0014, 0.0005, 0.0139);
    vec3 b = vec3(0.7, 0.1, 0.35);
    vec3 c = vec3(0.98, 0.55, 0.04);
    vec3 d = vec3(0.99, 1.0, 0.64);
    return t < 0.33 ? mix(a, b, t / 0.33) : (t < 0.66 ? mix(b, c, (t - 0.33) / 0.33) : mix(c, d, (t - 0.66) / 0.34));
}

void main() {
    vec4 truth = texture(u_truth, v_uv);
    vec4 prediction = texture(u_prediction, v_uv);
    if (u_mode == 2) {
        vec3 diff = abs(prediction.rgb - truth.rgb);
        frag_color = vec4(heat((diff.r + diff.g + diff.b) / 3.0 * u_error_gain), 1.0);
        return;
    }
    vec3 c = u_mode == 0 ? truth.rgb : prediction.rgb;
    frag_color = vec4(u_linear ? linear_to_srgb(c) : clamp(c, 0.0, 1.0), 1.0);
}
