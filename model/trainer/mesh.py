"""The device mesh: shape and layout (gin), and its Mesh TensorFlow implementation per device kind.

CPU (and GPU): `PlacementMeshImpl`, one TensorFlow device per mesh slice; on CPU every slice is
the host, which is how the tests run 2-device meshes.

TPU: `SimdMeshImpl`, built as `mesh_tensorflow.transformer.utils.tpu_estimator_model_fn` builds
it for T5:
- one core per replica (`TPUConfig.num_cores_per_replica = 1`): TPUEstimator runs the model on
  every core and broadcasts the whole batch to each (`InputPipelineConfig.BROADCAST`); the SIMD
  lowering picks each core's slice. So the mesh has exactly one slice per core
  (`mesh_shape` sizes multiply to the number of cores), which `tpu_mesh_impl` checks;
- logical mesh coordinates mapped to physical cores by mtf's `auto_logical_to_physical_tpu`
  (rings along the later mesh dimensions, where the all-reduces of model parallelism run);
- variables placed on the hosts by `BalancedVariablePlacer`, worker 0 reserving 300 MB per
  replica for the TPU binaries it caches (T5's figures).
Where we differ: T5's optional `HierarchicalTiling` is not offered (no T5 config uses it), and
on chips with one logical core (v4) mtf's mapping returns a function instead of a permutation
(it forgets to call its lexicographic default), so we use the lexicographic order there.
"""
from __future__ import annotations

import dataclasses
from typing import Any, List, Optional, Sequence, Tuple

import gin

from model.trainer.mtf_compat import mtf, mtf_utils, placement_mesh_impl, simd_mesh_impl

# Batch over a `batch` mesh axis (data parallelism); feed-forward, heads and vocabulary over a
# `model` axis (model parallelism): T5's layout (mtf's defaults.gin less ensembles and experts).
DEFAULT_LAYOUT = "batch:batch,d_ff:model,heads:model,vocab:model"
BINARY_CACHE_BYTES_PER_REPLICA = 300 * 1000000


@gin.configurable
@dataclasses.dataclass(frozen=True)
class MeshConfig:
    """Mesh shape and layout, in Mesh TensorFlow's string syntax.

    Layout rules whose mesh axis is absent from `mesh_shape` are ignored, so `mesh_shape` alone
    picks the mix: "" (one device), "batch:2", "model:2", "batch:8,model:4".
    """

    mesh_shape: str = ""
    layout: str = DEFAULT_LAYOUT

    @property
    def shape(self) -> mtf.Shape:
        return mtf.convert_to_shape(self.mesh_shape)

    @property
    def layout_rules(self) -> mtf.LayoutRules:
        return mtf.convert_to_layout_rules(self.layout)


def cpu_mesh_impl(config: MeshConfig) -> mtf.MeshImpl:
    return placement_mesh_impl.PlacementMeshImpl(
        config.shape, config.layout_rules, [""] * config.shape.size)


def physical_shape(topology_mesh_shape: Sequence[int]) -> List[int]:
    """A TPU topology's [x, y, z, cores per chip] as mtf's 3-d [rows, columns, cores]."""
    shape = [int(size) for size in topology_mesh_shape]
    if len(shape) == 4:
        return simd_mesh_impl.physical_shape_3d_from_topology_proto_4d(shape)
    return shape


def _use_mtf_flag_defaults() -> None:
    """mtf reads two absl flags (logical cores per chip, 2; fold_xy, False) that no one parses
    here: absl would parse sys.argv on first access and fail on our own options."""
    flags = simd_mesh_impl.FLAGS
    if not flags.is_parsed():
        flags.mark_as_parsed()


def logical_to_physical(config: MeshConfig, topology_mesh_shape: Sequence[int],
                        device_assignment: Any = None) -> List[int]:
    """For each logical mesh slice (lexicographic), the physical core it runs on."""
    _use_mtf_flag_defaults()
    cores = physical_shape(topology_mesh_shape)
    if mtf.list_product(cores) != config.shape.size:
        raise ValueError(
            f"MeshConfig.mesh_shape {config.mesh_shape!r} has {config.shape.size} slices but the "
            f"TPU topology {list(topology_mesh_shape)} has {mtf.list_product(cores)} cores: "
            "the mesh needs exactly one slice per core")
    if len(cores) == 3 and cores[2] != simd_mesh_impl.FLAGS.logical_cores_per_chip:
        return list(range(config.shape.size))
    return simd_mesh_impl.auto_logical_to_physical_tpu(
        config.shape.to_integer_list, cores, device_assignment=device_assignment)


def host_variable_placer(host_devices: Sequence[str], num_replicas: int
                         ) -> mtf_utils.BalancedVariablePlacer:
    """Spreads variables over the hosts' memory; worker 0 also caches every replica's binary."""
    usage = [BINARY_CACHE_BYTES_PER_REPLICA * num_replicas] + [0] * (len(host_devices) - 1)
    return mtf_utils.BalancedVariablePlacer(list(host_devices), usage)


def tpu_mesh_impl(config: MeshConfig, context: Any
                  ) -> Tuple[mtf.MeshImpl, mtf_utils.BalancedVariablePlacer]:
    """The SIMD mesh and variable placer for TPUEstimator's `params["context"]`."""
    if context.num_replicas != config.shape.size:
        raise ValueError(
            f"MeshConfig.mesh_shape {config.mesh_shape!r} has {config.shape.size} slices but the "
            f"TPU runs {context.num_replicas} replicas (one per core): make them equal")
    hosts = [context.tpu_host_placement_function(host_id=host)
             for host in range(context.num_hosts)]
    assignment = context.device_assignment
    mapping = logical_to_physical(config, assignment.topology.mesh_shape, assignment)
    impl = simd_mesh_impl.SimdMeshImpl(
        config.shape, config.layout_rules, None, assignment, logical_to_physical=mapping)
    return impl, host_variable_placer(hosts, context.num_replicas)


def mesh_impl(config: MeshConfig, use_tpu: bool, params: dict
              ) -> Tuple[mtf.MeshImpl, Optional[mtf_utils.BalancedVariablePlacer]]:
    """The mesh implementation for this device kind, and a variable placer (TPU only)."""
    if use_tpu:
        return tpu_mesh_impl(config, params["context"])
    return cpu_mesh_impl(config), None
